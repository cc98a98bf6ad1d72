"""Where a daemon's memory and first-select time go with one large folder.

Usage: python bench/daemon_memory.py [--size 10000] [--queries 50] [--runs 1]
       [--workdir DIR] [--log-level INFO]

Builds one folder of ``--size`` files (bench/_corpus.py, Zipf vocabulary),
starts a real daemon on it and reads the daemon's VmRSS and VmHWM (peak) from
/proc at each phase: ready (the cold index done), after the first select (the
folder's manifest and lists built) and after ``--queries`` more selects. The
first select is timed at the client; with ``--log-level INFO`` the daemon log's
lines from start to the first answer are printed too, to see what else ran
(cold index, term statistics, staleness checks) while it waited.
``bench/select_latency.py`` reports the last VmHWM as its "RSS peak".
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _corpus import make_tree, zipf_vocabulary
from _daemon import running_daemon
from select_latency import make_queries


def one_run(root: Path, directory: Path, queries: list[str], log_level: str) -> None:
    with running_daemon([root], log_level=log_level) as daemon:
        rows = [("ready", daemon.ready_s * 1000, daemon.memory_mb())]
        with daemon.client(timeout=300) as c:
            started = time.perf_counter()
            c.select("cold start: deploy rollback after a failed migration", str(directory))
            rows.append(("1st select", (time.perf_counter() - started) * 1000, daemon.memory_mb()))
            started = time.perf_counter()
            for query in queries:
                c.select(query, str(directory))
            elapsed = (time.perf_counter() - started) * 1000
            rows.append((f"+{len(queries)} selects", elapsed, daemon.memory_mb()))
        print(f"{'phase':>14} | {'time':>10} | {'VmRSS':>8} | {'VmHWM':>8}")
        for phase, ms, mem in rows:
            print(
                f"{phase:>14} | {ms:>7.0f} ms | {mem['VmRSS']:>5.1f} MB | {mem['VmHWM']:>5.1f} MB"
            )
        if log_level != "WARNING":  # what the daemon logged, without its per-select lines
            lines = daemon.log_path.read_text(errors="replace").splitlines()
            print("\n".join(ln for ln in lines if '"run_id"' not in ln)[-6000:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--log-level", default="WARNING")
    args = parser.parse_args()
    vocab = zipf_vocabulary()
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        root = Path(tmp) / "tree"
        make_tree(root, args.size, per_dir=args.size, vocab=vocab)
        directory = root / "project-0000" / "memory"
        for run in range(args.runs):
            print(f"run {run + 1}: {args.size} files, loadavg {os.getloadavg()[0]:.2f}")
            one_run(root, directory, make_queries(args.queries, vocab), args.log_level)


if __name__ == "__main__":
    main()
