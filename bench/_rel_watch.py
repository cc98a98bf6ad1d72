"""bench/reliability.py's scenarios where the watcher stops seeing the disk, judged held/failed.

* ``overflow``: the daemon is stopped (SIGSTOP) while more files are created
  and deleted than the kernel's inotify queue holds (``max_queued_events``),
  then continued: the queue overflowed, so the root must be rescanned at once
  (``status``: ``recrawls``, reason ``events-lost``) and the index converge
  long before the scheduled reconcile; a file written afterwards in a folder
  made during the stop must arrive as an event. Stopping the reader makes the
  overflow certain without lowering the machine-wide sysctl, which every
  other program's inotify instance created meanwhile would inherit.
* ``swap-root``: ``mv memory memory.bak; mkdir memory`` and new files written:
  the new folder is watched and indexed, none of the old one's files remain.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _limits import Daemon, NewDaemon, _converged, _status, _wait, _write, indexed

CONVERGE_S = 60.0
"""Far below the scheduled reconcile (300 s): converging at all says the rescan ran."""


def _files(root: Path, start: int, count: int, per_dir: int = 250) -> None:
    for i in range(start, start + count):
        _write(root / f"d{i // per_dir}", f"feedback_m{i}.md", f"body {i}")


def _gap(d: Daemon) -> int:
    """Files on disk missing from the index plus indexed files no longer on disk."""
    return len({str(p) for p in d.root.rglob("*.md")} ^ indexed(d))


def _recrawls(d: Daemon) -> tuple[int, str | None]:
    root = _status(d)["roots"][0]
    last = root.get("last_recrawl") or {}
    return int(root.get("recrawls", 0)), last.get("reason")


def overflow(new_daemon: NewDaemon, workdir: Path, row: Callable[..., Any]) -> Any:
    d = new_daemon(workdir, "overflow")
    _files(d.root, 0, 500)
    d.start()
    assert d.proc is not None
    try:
        queued = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
        # Into a watched folder (a folder made meanwhile has no watch yet): each new
        # file is at least two events (create, close-write).
        creates = queued // 2 + 2000
        d.proc.send_signal(signal.SIGSTOP)
        try:
            _files(d.root, 1000, creates, per_dir=creates + 1000)
            for path in sorted(d.root.glob("d1/*.md")):
                path.unlink()
            _files(d.root / "made", 0, 10)
        finally:
            d.proc.send_signal(signal.SIGCONT)
        seconds = _wait(lambda: _converged(d, []), CONVERGE_S)
        gap = _gap(d)
        recrawls, reason = _recrawls(d)
        # A folder made during the stop must be watched now: a new file there is an event.
        _write(d.root / "made" / "d0", "feedback_after.md", "written after the overflow")
        later = _wait(lambda: _converged(d, []), 10)
        held = seconds is not None and later is not None and reason == "events-lost"
        note = (
            f"{creates:,} creates past a {queued:,}-event queue; recrawls {recrawls} ({reason}); "
            f"the next event indexed in {later if later is None else round(later, 2)} s"
        )
        return row(
            "inotify queue overflow", gap + _gap(d), seconds or CONVERGE_S, None, held, note, d
        )
    finally:
        d.stop()


def swap_root(new_daemon: NewDaemon, workdir: Path, row: Callable[..., Any]) -> Any:
    d = new_daemon(workdir, "swaproot")
    _files(d.root, 0, 500)
    d.start()
    try:
        d.root.rename(d.root.with_name("memory.bak"))
        d.root.mkdir()
        _files(d.root, 1000, 500)
        seconds = _wait(lambda: _converged(d, []), CONVERGE_S)
        recrawls, reason = _recrawls(d)
        held = seconds is not None and reason == "root-replaced"
        note = f"500 files in the old folder, 500 in the new; recrawls {recrawls} ({reason})"
        return row(
            "root folder swapped (mv + mkdir)", _gap(d), seconds or CONVERGE_S, None, held, note, d
        )
    finally:
        d.stop()
