"""A ``dir`` whose resolution fails (a link the daemon may not read) is a named error.

Before: ``realpath`` raised ``PermissionError`` reading a ``/proc/<pid>/cwd`` link
of a process the daemon may not trace, and every method taking ``dir`` answered
``internal``. Now each answers ``invalid_params`` naming the field and the reason.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from daemon_fixtures import DaemonProc, module_daemon, write_memory

from memoryd.errors import InvalidParams
from memoryd.methods import METHODS

# A process that may not be traced: its /proc/<pid>/cwd link cannot be read by a
# process without CAP_SYS_PTRACE (any non-root user, root in many containers).
NOT_DUMPABLE = "import ctypes, sys; ctypes.CDLL(None).prctl(4, 0, 0, 0, 0); sys.stdin.read()"


def _unreadable(link: str) -> bool:
    try:
        os.readlink(link)
    except PermissionError:
        return True
    except OSError:
        return False
    return False


@pytest.fixture(scope="module")
def unreadable_link() -> Iterator[str]:
    """A path whose resolution raises ``PermissionError`` here (and so in the daemon)."""
    proc = subprocess.Popen([sys.executable, "-c", NOT_DUMPABLE], stdin=subprocess.PIPE)
    try:
        # The child's own once it has made itself untraceable (it answers 0 then);
        # init's where a root process may trace its own children.
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(0.5)
        found = [p for p in (f"/proc/{proc.pid}/cwd", "/proc/1/cwd") if _unreadable(p)]
        if not found:
            pytest.skip("this process may read every /proc/<pid>/cwd link (CAP_SYS_PTRACE)")
        yield found[0]
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProc]:
    home = tmp_path_factory.mktemp("unresolvable")
    write_memory(home / "memory" / "feedback_tests.md", "run the tests with pytest")
    with module_daemon(home) as d:
        yield d


TAKES_DIR = sorted(name for name, m in METHODS.items() if any(p.name == "dir" for p in m.params))
FILLERS: dict[str, Any] = {"query": "tests", "task": "tests", "project": "demo", "summary": "s"}


def test_the_method_table_still_has_the_methods_this_covers() -> None:
    assert len(TAKES_DIR) >= 10, TAKES_DIR


@pytest.mark.parametrize("method", TAKES_DIR)
def test_a_dir_that_cannot_be_resolved_is_invalid_params_naming_why(
    daemon: DaemonProc, unreadable_link: str, method: str
) -> None:
    required = [p.name for p in METHODS[method].params if p.required and p.name != "dir"]
    params = {name: FILLERS[name] for name in required}
    for raw in (unreadable_link, f"{unreadable_link}/memory"):
        with pytest.raises(InvalidParams) as caught:
            daemon.call(method, {**params, "dir": raw})
        assert "'dir': cannot resolve" in str(caught.value)
        assert "Permission denied" in str(caught.value)
        assert caught.value.data == {"field": "dir"}
    assert "ipc.handler_failed" not in daemon.log()
