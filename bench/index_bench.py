"""Index speed: cold index, no-change and one-file re-index, peak RSS.

Usage: python bench/index_bench.py [--sizes 1000,10000,100000] [--workdir DIR]

Each size gets a fresh synthetic tree (bench/_corpus.py). The baseline, in the
same run and on the same files, is a bare Python loop that walks the tree and
reads every file: the least any indexer must do. Indexing runs in a child
process so its peak RSS can be read from the kernel.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _corpus import make_tree

CHILD = r"""
import json, resource, sys, time
from pathlib import Path
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
db, root, touch = sys.argv[1], sys.argv[2], sys.argv[3]
if touch:
    p = Path(touch); p.write_text(p.read_text() + "\nedited\n")
store = IndexStore(Path(db))
t = time.perf_counter()
res = Syncer(store).sync_tree(root)
secs = time.perf_counter() - t
store.close()
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": secs, "added": res.added, "updated": res.updated,
                  "rows": res.rows_written, "rss_mb": rss}))
"""


def bare_read(root: Path) -> float:
    started = time.perf_counter()
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            with open(os.path.join(dirpath, name), "rb") as fh:
                fh.read()
    return time.perf_counter() - started


def run_child(db: Path, root: Path, touch: str = "") -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(db), str(root), touch],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, float] = json.loads(out.stdout)
    return result


def bench(size: int, workdir: Path) -> dict[str, float]:
    root = workdir / f"tree-{size}"
    files = make_tree(root, size)
    db = workdir / f"index-{size}.db"
    bare = min(bare_read(root) for _ in range(3))
    cold = run_child(db, root)
    nochange = run_child(db, root)
    one = run_child(db, root, touch=str(files[len(files) // 2]))
    assert cold["added"] == size and nochange["rows"] == 0 and one["updated"] == 1
    return {
        "files": size,
        "bare_read_s": bare,
        "bare_files_per_s": size / bare,
        "cold_s": cold["seconds"],
        "cold_files_per_s": size / cold["seconds"],
        "cold_vs_bare": cold["seconds"] / bare,
        "nochange_s": nochange["seconds"],
        "one_changed_s": one["seconds"],
        "peak_rss_mb": max(cold["rss_mb"], nochange["rss_mb"], one["rss_mb"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        rows = [bench(size, Path(tmp)) for size in sizes]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    header = (
        f"{'files':>7} | {'bare read':>10} | {'cold index':>10} | {'files/s':>8} | "
        f"{'x bare':>6} | {'no-change':>9} | {'1 changed':>9} | {'peak RSS':>8}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['files']:>7} | {r['bare_read_s']:>8.3f} s | {r['cold_s']:>8.3f} s | "
            f"{r['cold_files_per_s']:>8.0f} | {r['cold_vs_bare']:>6.1f} | "
            f"{r['nochange_s']:>7.3f} s | {r['one_changed_s']:>7.3f} s | "
            f"{r['peak_rss_mb']:>5.1f} MB"
        )


if __name__ == "__main__":
    main()
