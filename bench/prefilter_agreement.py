"""How the posting-list prefilter of large folders compares with the FTS5 one it replaced.

Folders above ``LARGE_DIRECTORY`` memories are ranked over a slice picked per
query. Both pickers run here on the same index, in-process, through
``Selector.run`` (the FTS5 one by lowering ``POSTINGS_MAX_FILES`` below the
folder's size):

* dev: every memory of the development corpus in one folder, ``--copies``
  times (renamed ``<stem>_<project>_<copy>.md``), so it is large; each query of
  queries.jsonl is asked there, and an answer counts its gold files in any copy;
* zipf: one folder of ``--files`` memories of bench/_corpus.py and
  ``--queries`` prompts of bench/select_latency.py.

For each it prints how many answers are identical, the overlap of the picks,
how many answers are empty, gold recall@5 where there is gold, and p50/p99 of
the in-process select time.

Usage: .venv/bin/python bench/prefilter_agreement.py [--copies 2] [--files 10000]
       [--queries 200] [--corpus DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _corpus import make_tree, zipf_vocabulary
from select_latency import make_queries, pct

from memoryd import logs
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.select import manifest as manifest_mod
from memoryd.select.analysis import TERM_ANALYSIS
from memoryd.select.selector import Selector
from memoryd.select.service import select_unrecorded

DEFAULT_CORPUS = Path(__file__).resolve().parents[1].parent / "shared/bench/coding-memories"
Ask = tuple[str, list[str]]
"""A query and the file stems that answer it (empty when there is no gold)."""


def replicate(corpus: Path, folder: Path, copies: int) -> list[Ask]:
    folder.mkdir(parents=True)
    for project in sorted((corpus / "projects").iterdir()):
        for path in sorted(project.glob("*.md")):
            if path.name == "MEMORY.md":
                continue
            for copy in range(copies):
                shutil.copy(path, folder / f"{path.stem}_{project.name}_{copy}.md")
    asks = []
    for line in (corpus / "queries.jsonl").read_text().splitlines():
        q = json.loads(line)
        gold = [f"{Path(g).stem}_{q['project']}_" for g in q["gold"]]
        asks.append((q["query"], gold))
    return asks


def answers(store: IndexStore, folder: Path, asks: list[Ask], fts: bool) -> dict[str, Any]:
    limit = manifest_mod.POSTINGS_MAX_FILES
    manifest_mod.POSTINGS_MAX_FILES = 0 if fts else limit
    try:
        selector = Selector()
        params = {"query": asks[0][0], "dir": str(folder), "ranker": "local"}
        select_unrecorded(selector, store.conn, params)  # the folder's manifest is built
        picks, times = [], []
        for query, _ in asks:
            started = time.perf_counter()
            result = select_unrecorded(selector, store.conn, {**params, "query": query})
            times.append((time.perf_counter() - started) * 1000)
            picks.append([s["filename"] for s in result["selected"]])
    finally:
        manifest_mod.POSTINGS_MAX_FILES = limit
    found = [
        sum(any(p.startswith(g) for p in got) for g in gold) / len(gold)
        for got, (_, gold) in zip(picks, asks, strict=True)
        if gold
    ]
    return {
        "picks": picks,
        "p50": pct(times, 50),
        "p99": pct(times, 99),
        "recall": sum(found) / len(found) if found else None,
    }


def compare(name: str, store: IndexStore, folder: Path, asks: list[Ask]) -> str:
    old, new = (answers(store, folder, asks, fts) for fts in (True, False))
    pairs = list(zip(old["picks"], new["picks"], strict=True))
    shared = sum(len(set(a) & set(b)) for a, b in pairs)
    union = sum(len(set(a) | set(b)) for a, b in pairs)
    rows = [
        f"{name}: {len(asks)} queries, {sum(a == b for a, b in pairs)} identical answers, "
        f"picks overlap {shared}/{union}"
    ]
    for label, r in (("fts5", old), ("postings", new)):
        recall = "" if r["recall"] is None else f", gold recall@5 {r['recall']:.3f}"
        empty = sum(not p for p in r["picks"])
        rows.append(
            f"  {label:8}: p50 {r['p50']:.2f} ms, p99 {r['p99']:.2f} ms, {empty} empty{recall}"
        )
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--copies", type=int, default=2)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args(argv)
    logs.configure(level="WARNING")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        store = IndexStore(work / "index.db", TERM_ANALYSIS)
        if (args.corpus / "queries.jsonl").is_file():
            dev = work / "dev" / "memory"
            asks = replicate(args.corpus, dev, args.copies)
            Syncer(store).sync_tree(str(dev))
            print(compare(f"dev corpus x{args.copies}", store, dev, asks))
        else:
            print(f"dev corpus not found at {args.corpus}: skipped")
        make_tree(work / "zipf", args.files, per_dir=args.files)
        zipf = work / "zipf" / "project-0000" / "memory"
        Syncer(store).sync_tree(str(zipf))
        asks = [(q, []) for q in make_queries(args.queries, zipf_vocabulary())]
        print(compare(f"zipf {args.files}", store, zipf, asks))
        store.close()
    print(f"loadavg {Path('/proc/loadavg').read_text().split()[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
