"""The first index of a large tree when its worker processes die: the writer finishes alone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from test_sync import make_tree

from memoryd.indexer.coldload import PARALLEL_MIN_FILES
from memoryd.indexer.store import IndexStore
from memoryd.select.analysis import TERM_ANALYSIS


def _children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (read from /proc, Linux only like the daemon)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # The command name in parentheses may hold spaces; fields resume after it.
        if int(stat.rpartition(")")[2].split()[1]) == pid:
            found.append(int(entry))
    return found


def test_workers_killed_mid_load_leave_a_complete_index(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    total = PARALLEL_MIN_FILES * 3
    make_tree(root, total, per_dir=500)
    db = tmp_path / "index.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "memoryd", "index", str(root), "--db", str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    killed: set[int] = set()
    deadline = time.monotonic() + 120
    # Workers are the fork server's children, so grandchildren of the indexer.
    while proc.poll() is None and time.monotonic() < deadline:
        for worker in [w for child in _children(proc.pid) for w in _children(child)]:
            if worker not in killed:
                os.kill(worker, signal.SIGKILL)
                killed.add(worker)
        time.sleep(0.002)
    out, _ = proc.communicate(timeout=120)
    assert killed, "no worker process was ever seen"
    assert proc.returncode == 0, out
    assert "index.workers_failed" in out
    store = IndexStore(db, TERM_ANALYSIS)
    try:
        assert store.conn.execute("SELECT count(*) FROM files").fetchone()[0] == total
        store.conn.execute("INSERT INTO files_fts(files_fts) VALUES ('integrity-check')")
        fts_rows = store.conn.execute("SELECT count(*) FROM files_fts").fetchone()[0]
        assert fts_rows == total
    finally:
        store.close()
