"""Compaction report speed over a large synthetic memory tree.

Usage: python bench/report_bench.py [--files 10000] [--workdir DIR] [--json]

The tree comes from bench/_corpus.py (folders of 200 memories) and is indexed
once with IndexStore + Syncer, as the daemon would have it. The baseline, in
the same run and on the same files, is a bare walk that reads every file: a
report works from the index and should not cost much more than one pass over
the disk. The target is a full report (build and write both files) in under
5 seconds for 10,000 files.

The synthetic descriptions draw on a 41-word vocabulary, so they overlap far
more than real memories do and the duplicate count is large; that makes the
pairwise duplicate search work hard, which is what the figure should show.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _corpus import make_tree

from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.report import build_report, write_report

TARGET_S = 5.0
COUNTED = ("broken_files", "memory_index_issues", "duplicates", "secret_files", "old_sessions")


def bare_read(root: Path) -> float:
    started = time.perf_counter()
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            with open(os.path.join(dirpath, name), "rb") as fh:
                fh.read()
    return time.perf_counter() - started


def bench(size: int, workdir: Path) -> dict[str, float]:
    root = workdir / f"tree-{size}"
    make_tree(root, size)
    bare = min(bare_read(root) for _ in range(3))
    store = IndexStore(workdir / f"index-{size}.db")
    try:
        started = time.perf_counter()
        Syncer(store).sync_tree(str(root))
        index_s = time.perf_counter() - started
        runs = []
        for _ in range(3):
            started = time.perf_counter()
            report = build_report(store.conn, [str(root)], 30 * 86400)
            built = time.perf_counter() - started
            write_report(report, workdir / "reports")
            runs.append((time.perf_counter() - started, built))
    finally:
        store.close()
    total, built = min(runs)
    summary = report["summary"]
    assert summary["files"] == size, summary
    return {
        "files": size,
        "bare_read_s": bare,
        "index_s": index_s,
        "report_build_s": built,
        "report_total_s": total,
        "report_vs_bare": total / bare,
        **{key: summary[key] for key in COUNTED},
    }


def table(row: dict[str, float]) -> str:
    lines = [f"{'measure':<22}{'value':>14}", "-" * 36]
    for key, value in row.items():
        text = f"{value:.3f}" if isinstance(value, float) else f"{value:,}"
        lines.append(f"{key:<22}{text:>14}")
    verdict = "met" if row["report_total_s"] < TARGET_S else "MISSED"
    lines.append(f"target < {TARGET_S:g} s for the report: {verdict}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memoryd-report-bench-") as tmp:
        row = bench(args.files, args.workdir or Path(tmp))
    print(json.dumps(row) if args.json else table(row))
    return 0 if row["report_total_s"] < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
