"""Where a daemon's memory and first-select time go with large folders, before and after edits.

Usage: python bench/daemon_memory.py [--size 10000] [--per-dir N] [--queries 50]
       [--adds 20] [--runs 1] [--workdir DIR] [--log-level INFO]

Builds ``--size`` files (bench/_corpus.py, Zipf vocabulary) in folders of
``--per-dir`` (default: all in one), starts a real daemon on them and reads
the daemon's VmRSS and VmHWM (peak) from /proc at each phase: ready (the cold
index done), after the first select of every folder (their manifests built),
after ``--queries`` more selects cycled over the folders, and after ``--adds``
new memories were written into the first folder, one at a time, each followed
by a select there once the index holds it (so each is a first select after a
change). The first selects are timed at the client; with ``--log-level INFO``
the daemon log's lines from start to the first answer are printed too, to see
what else ran (cold index, term statistics, staleness checks) while it waited.
``bench/select_latency.py`` reports the last VmHWM as its "RSS peak".
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _corpus import make_tree, zipf_vocabulary
from _daemon import BenchDaemon, running_daemon
from select_latency import make_queries

ADDED = "---\nname: added {n}\ndescription: okapi note {n}\ntype: project\n---\n\nokapi {n}\n"


def _indexed(daemon: BenchDaemon, path: Path, timeout: float = 30.0) -> None:
    """Wait until the daemon's index holds ``path`` (read-only, from its database)."""
    db = daemon.home / "state" / "memoryd" / "index.db"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            found = conn.execute(
                "SELECT 1 FROM files WHERE directory = ? AND filename = ?",
                (str(path.parent), path.name),
            ).fetchone()
        finally:
            conn.close()
        if found:
            return
        time.sleep(0.01)
    raise RuntimeError(f"{path} not indexed within {timeout:.0f} s")


def one_run(root: Path, dirs: list[Path], queries: list[str], args: argparse.Namespace) -> None:
    with running_daemon([root], log_level=args.log_level) as daemon:
        rows = [("ready", daemon.ready_s * 1000, daemon.memory_mb())]
        with daemon.client(timeout=300) as c:
            firsts = []
            for directory in dirs:
                started = time.perf_counter()
                c.select("cold start: deploy rollback after a failed migration", str(directory))
                firsts.append((time.perf_counter() - started) * 1000)
            rows.append((f"1st select x{len(dirs)}", max(firsts), daemon.memory_mb()))
            started = time.perf_counter()
            for i, query in enumerate(queries):
                c.select(query, str(dirs[i % len(dirs)]))
            elapsed = (time.perf_counter() - started) * 1000
            rows.append((f"+{len(queries)} selects", elapsed, daemon.memory_mb()))
            after = []
            for n in range(args.adds):
                path = dirs[0] / f"project_added_{n}.md"
                path.write_text(ADDED.format(n=n), encoding="utf-8")
                _indexed(daemon, path)
                started = time.perf_counter()
                c.select(f"okapi note {n}", str(dirs[0]))
                after.append((time.perf_counter() - started) * 1000)
            if after:
                rows.append((f"+{args.adds} adds", max(after), daemon.memory_mb()))
        print(f"{'phase':>16} | {'time':>10} | {'VmRSS':>8} | {'VmHWM':>8}")
        for phase, ms, mem in rows:
            print(
                f"{phase:>16} | {ms:>7.0f} ms | {mem['VmRSS']:>5.1f} MB | {mem['VmHWM']:>5.1f} MB"
            )
        print("(time: slowest first select; all selects; slowest first select after an add)")
        if args.log_level != "WARNING":  # what the daemon logged, without its per-select lines
            lines = daemon.log_path.read_text(errors="replace").splitlines()
            print("\n".join(ln for ln in lines if '"run_id"' not in ln)[-6000:])


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--per-dir", type=int, default=0, help="files per folder (0: one folder)")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--adds", type=int, default=20)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--log-level", default="WARNING")
    args = parser.parse_args()
    vocab = zipf_vocabulary()
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        root = Path(tmp) / "tree"
        make_tree(root, args.size, per_dir=args.per_dir or args.size, vocab=vocab)
        dirs = sorted(p / "memory" for p in root.iterdir())
        for run in range(args.runs):
            print(
                f"run {run + 1}: {args.size} files in {len(dirs)} folders, "
                f"loadavg {os.getloadavg()[0]:.2f}"
            )
            one_run(root, dirs, make_queries(args.queries, vocab), args)
            for path in dirs[0].glob("project_added_*.md"):
                path.unlink()


if __name__ == "__main__":
    main()
