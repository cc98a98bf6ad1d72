"""SIGHUP applies every setting, drops roots taken out of the file, never half-applies."""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3
from collections.abc import Callable
from pathlib import Path

from daemon_fixtures import DaemonProc, wait_until, write_memory


def _roots(d: DaemonProc) -> list[str]:
    return [r["path"] for r in d.call("status")["roots"]]


def _report_days(d: DaemonProc) -> float:
    """The age cut-off of a report made now with the default setting."""
    written = Path(d.call("report", {})["json"])
    days: float = json.loads(written.read_text())["older_than_days"]
    return days


def _hup_and_wait(d: DaemonProc, reloads: int) -> None:
    assert d.proc is not None
    d.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: d.log().count('"daemon.reload') >= reloads, 15, f"reload {reloads}")


def test_sighup_applies_every_setting_and_unwatches_removed_roots(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    keep, drop = tmp_path / "keep", tmp_path / "drop"
    write_memory(keep / "user_a.md", "kept root memory", mtype="user")
    write_memory(drop / "user_b.md", "dropped root memory", mtype="user")
    config = tmp_path / "config.yaml"
    config.write_text(f"roots: [{keep}, {drop}]\nreports: {{older_than_days: 30}}\n")
    d = make_daemon(roots=[], start=False, extra_args=["--config", str(config)])
    d.start()
    assert sorted(_roots(d)) == sorted([str(keep), str(drop)])

    config.write_text(f"roots: [{keep}]\nsettle_ms: 10\nreports: {{older_than_days: 7}}\n")
    _hup_and_wait(d, 1)
    assert _roots(d) == [str(keep)]
    assert '"daemon.root_forgotten"' in d.log()
    assert _report_days(d) == 7

    # A bad file changes nothing at all: not the roots, not the other settings.
    config.write_text(f"roots: [{keep}, {drop}]\nreports: {{older_than_days: 1}}\nsettle_ms: x\n")
    _hup_and_wait(d, 2)
    assert '"daemon.reload_failed"' in d.log()
    assert _roots(d) == [str(keep)]
    assert _report_days(d) == 7
    # The dropped root is not watched any more: a new file there is not indexed.
    write_memory(keep / "user_c.md", "written after the reload", mtype="user")
    wait_until(lambda: d.call("status")["roots"][0]["files"] == 2, 15, "the kept root's event")


def test_sighup_reaches_the_selector_and_its_telemetry(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    root = tmp_path / "mem"
    write_memory(root / "feedback_fast.md", "run the fast pytest subset with coverage")
    config = tmp_path / "config.yaml"
    config.write_text(f"roots: [{root}]\n")
    d = make_daemon(roots=[], start=False, extra_args=["--config", str(config)])
    d.start()
    query = "how do I run the fast pytest subset?"
    d.call("select", {"query": query, "dir": str(root)})
    config.write_text(f"roots: [{root}]\ntelemetry:\n  log_queries: true\n")
    _hup_and_wait(d, 1)
    d.call("select", {"query": query, "dir": str(root)})
    d.call("stats", {})  # reads its own writes: every run answered so far is in
    with contextlib.closing(sqlite3.connect(d.db)) as conn:
        logged = [r[0] for r in conn.execute("SELECT query FROM selector_runs ORDER BY at")]
    assert logged == [None, query]
