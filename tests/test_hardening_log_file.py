"""``serve --log-file``: the daemon's own log is private and bounded.

A daemon the CLI starts writes to a file nobody rotates (under systemd the
journal does). Past its size cap the file moves to ``<name>.1`` before the next
line, so the log never holds more than two generations. A real daemon.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from pathlib import Path

from daemon_fixtures import DaemonProc, write_memory

from memoryd.logs import LOG_BYTES


def test_the_log_file_is_private_and_moves_aside_past_its_cap(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    log = tmp_path / "own.log"
    with log.open("wb") as fh:  # an old log already past the cap (sparse: nothing written)
        fh.truncate(LOG_BYTES + 1)
    log.chmod(0o644)  # an older log, readable by others
    daemon = make_daemon(start=False)
    daemon.extra_args += ["--log-file", str(log)]
    daemon.start()
    folder = write_memory(daemon.roots[0] / "feedback_ledger.md", "invoices post nightly").parent
    daemon.call("select", {"query": "when do invoices post", "dir": str(folder)})
    deadline = time.monotonic() + 10
    while "selector.run" not in log.read_text(errors="replace"):
        assert time.monotonic() < deadline, "the daemon never logged its select"
        time.sleep(0.05)
    old = log.with_name("own.log.1")
    assert old.stat().st_size == LOG_BYTES + 1
    assert log.stat().st_size < LOG_BYTES
    assert stat.S_IMODE(log.stat().st_mode) == stat.S_IMODE(old.stat().st_mode) == 0o600
    assert "daemon.ready" in log.read_text()


def test_a_log_file_path_that_is_a_symlink_is_refused(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("")
    log = tmp_path / "own.log"
    os.symlink(target, log)
    daemon = make_daemon(start=False)
    daemon.extra_args += ["--log-file", str(log)]
    daemon.start(wait=False)
    assert daemon.proc is not None and daemon.proc.wait(timeout=30) == 1
    assert target.read_text() == ""
    assert f"memoryd: error: --log-file {log}: Too many levels of symbolic links" in daemon.log()
