"""A CLI command with no daemon running starts one, and commands started together start one.

The daemon is the only writer of the index: ``list``, ``select``, ``save`` and
the rest ask it, starting ``memoryd serve`` in the background on the socket
and state folder the command resolved when none answers. Real processes in
the test's own folders (tests/isolation.py stops the daemon at the end).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from daemon_fixtures import write_memory
from isolation import STARTER, environ_of, serving

STARTED = "memoryd: no daemon answered on "


def started_here() -> list[int]:
    """The ``memoryd serve`` processes this test's commands started."""
    mark = os.environ[STARTER]
    return [pid for pid, _ in serving() if environ_of(pid).get(STARTER) == mark]


def test_commands_started_together_start_one_daemon_where_they_look(tmp_path: Path) -> None:
    folder = write_memory(
        tmp_path / "memory" / "feedback_ledger.md", "invoices post nightly"
    ).parent
    argv = [sys.executable, "-m", "memoryd", "list", str(folder), "--json"]
    runs = [
        subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    done = [(run.wait(timeout=120), *run.communicate()) for run in runs]
    assert [code for code, _, _ in done] == [0] * 4, [err for _, _, err in done]
    assert all('"feedback_ledger.md"' in out for _, out, _ in done)
    notes = [err for _, _, err in done if err.startswith(STARTED)]
    assert len(notes) == 1, [err for _, _, err in done]  # the others found it answering
    (pid,) = started_here()
    socket = Path(os.environ["XDG_RUNTIME_DIR"]) / "memoryd" / "memoryd.sock"
    log = Path(os.environ["XDG_STATE_HOME"]) / "memoryd" / "daemon.log"
    assert notes[0] == f"{STARTED}{socket}; started one (pid {pid}, log {log})\n"
    pidfile = Path(os.environ["XDG_STATE_HOME"]) / "memoryd" / "memoryd.pid"
    assert pidfile.read_text().strip() == str(pid)
    stopped = subprocess.run(
        [sys.executable, "-m", "memoryd", "stop"], capture_output=True, text=True, timeout=60
    )
    assert stopped.stdout == f"memoryd (pid {pid}) stopped\n"


def test_a_daemon_that_cannot_start_is_an_error_naming_its_log(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    config = tmp_path / "config" / "memoryd" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("select: [\n", encoding="utf-8")
    folder = write_memory(
        tmp_path / "memory" / "feedback_ledger.md", "invoices post nightly"
    ).parent
    done = subprocess.run(
        [sys.executable, "-m", "memoryd", "list", str(folder)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    log = Path(os.environ["XDG_STATE_HOME"]) / "memoryd" / "daemon.log"
    assert done.returncode == 1 and done.stdout == ""
    started, error = done.stderr.splitlines()
    assert started.startswith(STARTED)
    assert error.startswith("memoryd: error: the daemon started on ")
    assert f"exited with code 1 before answering: memoryd: error: {config}: invalid YAML" in error
    assert error.endswith(f"(its log: {log})")
    assert started_here() == []
