"""The test suite never reaches the daemon of the user who runs it.

A pytest temp folder became a watched root of the user's ``make serve``
daemon: a test ran the CLI without a socket of its own, so it found the
user's. tests/isolation.py now points HOME, the XDG folders and memoryd's
variables into a folder of the run's own before any test runs. The proof: a
"user" daemon on the paths the run started with (in a temp home, so this test
does not touch the real user either), an inner pytest run of tests that forget
to isolate themselves, and that daemon's roots and requests afterwards.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_fixtures import DaemonProc, write_memory
from isolation import USER_ENV, isolated_env

from memoryd import paths
from memoryd.claude_folders import claude_base

TESTS = Path(__file__).resolve().parent

INNER = [
    str(TESTS / "careless_client.py"),
    # A real test that reached the user's daemon: `list` without a socket of its own.
    f"{TESTS / 'test_claude_memory_format.py'}::test_list_and_the_tool_rules_see_the_nested_type",
]


@pytest.fixture
def user() -> Iterator[DaemonProc]:
    """A daemon as the user runs it: ``memoryd serve`` on their default paths, here a temp home."""
    base = Path(tempfile.mkdtemp(prefix="md-user-", dir="/tmp"))  # AF_UNIX path limit
    env = isolated_env(base, USER_ENV)
    memory = write_memory(base / "notes" / "feedback_mine.md", "the user's own memory").parent
    d = DaemonProc(
        home=base,
        roots=[memory],
        socket=base / "run" / "memoryd" / "memoryd.sock",
        state_dir=base / "state" / "memoryd",
        env=env,
    )
    d.start(argv=[sys.executable, "-m", "memoryd", "serve", "--root", str(memory)])
    try:
        yield d
    finally:
        if d.proc is not None and d.proc.poll() is None:
            d.stop()
        shutil.rmtree(base, ignore_errors=True)


def test_this_run_points_every_memoryd_path_into_a_folder_of_its_own() -> None:
    home = Path(USER_ENV.get("HOME") or Path.home())
    for path in (
        paths.default_socket(),
        paths.state_dir(),
        paths.config_file(),
        paths.data_memory_dir(),
        claude_base(),
        Path.home(),
    ):
        assert not path.is_relative_to(home), path
    assert paths.socket_choice().reason == "$XDG_RUNTIME_DIR"
    assert not any(k.startswith(("MEMORYD_SOCKET", "MEMORYD_DB", "CLAUDE")) for k in os.environ)


def roots(d: DaemonProc) -> list[tuple[str, str]]:
    return [(r["path"], r["origin"]) for r in d.call("status")["roots"]]


def test_tests_that_forget_to_isolate_leave_the_users_daemon_untouched(user: DaemonProc) -> None:
    before = roots(user)
    assert before == [(str(user.roots[0]), "serve")]
    inner = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *INNER],
        env=user.env,  # the run starts where the user's daemon is
        cwd=TESTS.parent,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert inner.returncode == 0 and "4 passed" in inner.stdout, inner.stdout + inner.stderr
    assert roots(user) == before
    assert user.call("stats", {"since": "1h"})["runs"] == 0
    assert "careless" not in user.log() and "reference_deploy" not in user.log()
