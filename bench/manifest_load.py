"""What a folder's first ``select`` pays before ranking: building its manifest, stage by stage.

A folder's manifest is built on its first query and again after any change
to it. This bench indexes one Zipf folder (bench/_corpus.py), then rebuilds
that folder's manifest ``--repeat`` times with every cache that would hide the
cost cleared, and prints the median of each stage: reading the rows with their
stored term counts, building the posting lists, supersession, and the
near-duplicate links. The near-duplicate stage is also timed the way it was
done before the links read stored counts (tokenizing every header), as the
baseline of the same run.

Usage: .venv/bin/python bench/manifest_load.py [--files 200] [--repeat 15]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from _corpus import make_tree

from memoryd import logs
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.select import manifest, relations, supersession
from memoryd.select.analysis import TERM_ANALYSIS
from memoryd.select.postings import Postings

T = TypeVar("T")


def _timed(spent: list[float], work: Callable[..., T], *args: Any) -> T:
    start = time.perf_counter()
    out = work(*args)
    spent.append((time.perf_counter() - start) * 1000)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args(argv)
    logs.configure(level="WARNING")
    stages: dict[str, list[float]] = {
        k: [] for k in ("rows", "postings", "supersession", "near-dups", "near-dups from text")
    }
    with tempfile.TemporaryDirectory() as tmp:
        make_tree(Path(tmp) / "tree", args.files, per_dir=args.files)
        store = IndexStore(Path(tmp) / "index.db", TERM_ANALYSIS)
        Syncer(store).sync_tree(str(Path(tmp) / "tree"))
        folder = str(Path(tmp) / "tree" / "project-0000" / "memory")
        sql = (
            f"SELECT {manifest._WITH_TERMS} FROM files WHERE directory = ? "
            "AND kind = 'memory' AND error IS NULL ORDER BY filename"
        )
        for _ in range(args.repeat):
            supersession._term_set.cache_clear()
            rows = _timed(stages["rows"], manifest._with_terms, store.conn.execute(sql, (folder,)))
            files = [f for f, _, _ in rows]
            docs = [(f.filename, d) for f, d, _ in rows]
            _timed(stages["postings"], Postings, docs)
            stored = [manifest.to_candidate(f, d) for f, d, _ in rows]
            stale = _timed(stages["supersession"], supersession.superseded_by, stored)
            vectors = relations.HeaderVectors()  # empty each round, as a first load's
            _timed(stages["near-dups"], relations._near_duplicates, stored, stale, vectors)
            bare = [manifest.to_candidate(f) for f in files]
            _timed(stages["near-dups from text"], relations._near_duplicates, bare, stale, vectors)
        store.close()
    print(f"manifest of a {args.files}-file folder, median of {args.repeat} rebuilds")
    print(f"{'stage':<22}{'ms':>8}")
    for name, spent in stages.items():
        print(f"{name:<22}{statistics.median(spent):>8.1f}")
    total = sum(statistics.median(s) for k, s in stages.items() if k != "near-dups from text")
    print(f"{'total (stored counts)':<22}{total:>8.1f}")
    print(f"loadavg {Path('/proc/loadavg').read_text().split()[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
