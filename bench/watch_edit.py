"""What one edit in a large watched folder costs the daemon, against a full re-stat.

A real daemon watches one Zipf folder of ``--files`` memories (bench/_corpus.py).
``--edits`` times, a line is appended to one memory; the bench polls the row's
size over a read-only connection until the index shows the write (write ->
indexed) and reads the daemon's CPU time from /proc before and 0.6 s after the
edit (daemon CPU per edit: everything the edit set off, the watcher's batch and
the writer's job included).

The baseline, measured in the same run and in-process on a copy of the same
index: one stat-only reconcile of the whole folder (``Syncer.sync_tree`` with
nothing changed), which is what every edit cost while watchdog's "directory
modified" companion event made the writer re-stat the folder.

Usage: .venv/bin/python bench/watch_edit.py [--files 10000] [--edits 40]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _corpus import make_tree
from _daemon import BenchDaemon, running_daemon

from memoryd import logs
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer

SETTLE_S = 0.6
"""After an edit is indexed, how long the bench waits before reading the daemon's CPU."""


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_indexed(db: Path, path: Path, size: int) -> None:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            row = conn.execute("SELECT size FROM files WHERE path = ?", (str(path),)).fetchone()
            if row is not None and row[0] == size:
                return
            time.sleep(0.002)
        raise RuntimeError(f"{path} not indexed within 30 s")
    finally:
        conn.close()


def edits(
    d: BenchDaemon, db: Path, files: list[Path], count: int
) -> tuple[list[float], list[float]]:
    """(write -> indexed ms, daemon CPU ms) for ``count`` edits, one file at a time."""
    latency: list[float] = []
    cpu: list[float] = []
    step = max(1, len(files) // count)
    for n in range(count):
        path = files[(n * step) % len(files)]
        before = cpu_s(d.pid)
        started = time.perf_counter()
        with path.open("a", encoding="utf-8") as out:
            out.write(f"\nedit {n}\n")
        wait_indexed(db, path, path.stat().st_size)
        latency.append((time.perf_counter() - started) * 1000)
        time.sleep(SETTLE_S)
        cpu.append((cpu_s(d.pid) - before) * 1000)
    return latency, cpu


def full_restat_ms(db: Path, folder: Path, tmp: Path, runs: int = 5) -> list[float]:
    """The baseline: a stat-only reconcile of the whole folder, on a copy of the index."""
    copy = tmp / "baseline.db"
    with sqlite3.connect(db) as src, sqlite3.connect(copy) as dst:
        src.backup(dst)
    store = IndexStore(copy)
    try:
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            Syncer(store).sync_tree(str(folder))
            times.append((time.perf_counter() - started) * 1000)
        return times
    finally:
        store.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--edits", type=int, default=40)
    args = parser.parse_args()
    logs.configure(level="WARNING")
    tmp = Path(tempfile.mkdtemp(prefix="memoryd-watch-edit-"))
    try:
        files = make_tree(tmp / "tree", args.files, per_dir=args.files)
        folder = files[0].parent
        with running_daemon([folder]) as d:
            db = d.home / "state" / "memoryd" / "index.db"
            time.sleep(1.0)  # the first index's follow-up work (staleness, telemetry)
            latency, cpu = edits(d, db, files, args.edits)
            baseline = full_restat_ms(db, folder, tmp)
        load = Path("/proc/loadavg").read_text().split()[0]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    latency.sort()
    cpu.sort()
    p90 = int(len(latency) * 0.9)
    print(f"{args.files} files in one watched folder, {args.edits} edits (load {load})")
    print(f"{'':34} {'p50 ms':>8} {'p90 ms':>8}")
    print(f"{'write -> indexed':34} {statistics.median(latency):8.1f} {latency[p90]:8.1f}")
    print(f"{'daemon CPU per edit':34} {statistics.median(cpu):8.1f} {cpu[p90]:8.1f}")
    print(f"{'baseline: re-stat the whole folder':34} {statistics.median(baseline):8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
