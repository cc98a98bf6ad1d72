"""The first ``select`` of a folder, and the first after a change, against one header scan.

A folder's first ``select`` builds its manifest from the index; so does the
first after any change to one of its memories. Neither may cost more than 2x
what an agent without an index pays for every prompt: reading every file and
parsing its frontmatter with libyaml's ``CSafeLoader`` once (the baseline,
:func:`_yardstick.header_scan`, page cache warm, its best case). This bench
measures both against that scan of the same folder in the same run,
in-process on a real index (no daemon, no socket):

* ``1st``: a fresh selector's first ``select`` of the folder;
* ``added``: the first ``select`` after one new memory was written and indexed;
* ``edited``: the first ``select`` after an existing memory was rewritten;
* ``warm``: the median of the selects that follow (nothing to build);
* ``1st cpu``: ``1st``'s CPU time over the scan's (both in this one thread), which a
  loaded machine moves less than wall time.

``--others N`` first loads N memories in other folders (of ``--other-size``
files each) into the same selector, as a daemon serving other projects holds
them. Each size is measured ``--runs`` times on a fresh tree; the table gives
every run, and ratios to the scan of the same run.

Usage: .venv/bin/python bench/first_select.py [--sizes 200,10000] [--runs 3]
       [--others 0] [--other-size 200] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _corpus import make_tree, zipf_vocabulary
from _yardstick import header_scan
from select_latency import make_queries

from memoryd import logs
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.select.selector import Selector
from memoryd.select.wiring import select_unrecorded

SCANS = 3
"""Header scans timed per run (the median is the baseline)."""
WARM = 20


def _ms(fn: Any, *args: Any, cpu: list[float] | None = None) -> float:
    """Wall milliseconds of ``fn(*args)``; its CPU milliseconds appended to ``cpu``."""
    started, cpu_started = time.perf_counter(), time.process_time()
    fn(*args)
    if cpu is not None:
        cpu.append((time.process_time() - cpu_started) * 1000)
    return (time.perf_counter() - started) * 1000


def one_run(
    size: int, workdir: Path, seed: int, queries: list[str], args: argparse.Namespace
) -> dict[str, Any]:
    vocab = zipf_vocabulary()
    root = workdir / f"tree-{size}"
    # A tree of its own per run: memories seen in an earlier run would find their
    # titles' terms in the process's caches, which a daemon's first load does not.
    make_tree(root, size, per_dir=size, vocab=vocab, seed=seed)
    folder = root / "project-0000" / "memory"
    store = IndexStore(workdir / f"index-{size}.db")
    try:
        syncer = Syncer(store)
        syncer.sync_tree(str(root))
        selector = Selector()
        if args.others:
            others = workdir / f"others-{size}"
            make_tree(others, args.others, per_dir=args.other_size, vocab=vocab, seed=-seed)
            syncer.sync_tree(str(others))
            for directory in sorted(others.glob("*/memory")):
                select_unrecorded(
                    selector, store.conn, {"query": queries[0], "dir": str(directory)}
                )
        header_scan(folder)  # page cache warm: the baseline's best case
        cpu: list[float] = []
        scan = statistics.median(_ms(header_scan, folder, cpu=cpu) for _ in range(SCANS))
        scan_cpu = statistics.median(cpu)

        def select(query: str) -> float:
            params = {"query": query, "dir": str(folder), "ranker": "local"}
            return _ms(select_unrecorded, selector, store.conn, params, cpu=cpu)

        out: dict[str, Any] = {"files": size, "scan": scan, "load": os.getloadavg()[0]}
        out["first"] = select(queries[1])
        out["cpu"] = cpu[-1] / scan_cpu  # on a loaded machine CPU time ranks what wall time cannot
        out["warm"] = statistics.median(select(q) for q in queries[2 : 2 + WARM])
        added = folder / "feedback_bench_added.md"
        added.write_text(
            "---\nname: okapi release rule\ndescription: pin okapi before a release\n"
            "type: feedback\n---\n\nAlways pin okapi.\n",
            encoding="utf-8",
        )
        syncer.sync_path(str(added))
        out["added"] = select("okapi release pinning")
        edited = sorted(folder.glob("*.md"))[len(queries) % size]
        edited.write_text(edited.read_text(encoding="utf-8") + "\nzebra okapi\n", encoding="utf-8")
        syncer.sync_path(str(edited))
        out["edited"] = select("zebra okapi")
        return out
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="200,10000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--others", type=int, default=0)
    parser.add_argument("--other-size", type=int, default=200)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    logs.configure(level="WARNING")
    vocab = zipf_vocabulary()
    queries = make_queries(WARM + 2, vocab)
    print(
        f"{'files':>6} | {'scan':>8} | {'1st':>8} {'x scan':>6} | {'added':>8} {'x scan':>6} | "
        f"{'edited':>8} {'x scan':>6} | {'warm':>7} | 1st cpu | load"
    )
    for size in (int(s) for s in args.sizes.split(",") if s):
        for run in range(args.runs):
            with tempfile.TemporaryDirectory(prefix="mdfirst-", dir=args.workdir) as tmp:
                r = one_run(size, Path(tmp), size + run, queries, args)
            cells = " | ".join(
                f"{r[k]:>5.0f} ms {r[k] / r['scan']:>5.2f}x" for k in ("first", "added", "edited")
            )
            print(
                f"{size:>6} | {r['scan']:>5.0f} ms | {cells} | {r['warm']:>4.1f} ms | "
                f"{r['cpu']:>6.2f}x | {r['load']:.2f}"
            )
    print(f"others loaded first: {args.others} memories in folders of {args.other_size}")


if __name__ == "__main__":
    main()
