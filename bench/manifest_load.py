"""What a folder's first ``select`` pays before ranking: building its manifest, stage by stage.

A folder's manifest is built on its first query and again after any change
to it. This bench indexes one Zipf folder (bench/_corpus.py), then rebuilds
that folder's manifest ``--repeat`` times with every cache that would hide the
cost cleared, and prints the median of each stage: reading the rows, analysing
every memory's text, supersession, and the near-duplicate links. The
near-duplicate stage is also timed tokenizing every header again (candidates
without their analysis), as the baseline of the same run.

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
from memoryd.indexer import queries
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.select import analysis, dated, manifest, relations, supersession

T = TypeVar("T")


def _timed(spent: list[float], work: Callable[..., T], *args: Any) -> T:
    start = time.perf_counter()
    out = work(*args)
    spent.append((time.perf_counter() - start) * 1000)
    return out


def _rows(rows: Any) -> list[queries.IndexedFile]:
    return [queries.row_to_file(row) for row in rows]


def _analyses(files: Sequence[queries.IndexedFile]) -> list[analysis.DocTerms]:
    analysis._STEMS.clear()  # a first load meets words it has not stemmed yet
    return [analysis.analyse(f.filename, f.name, f.description, f.body) for f in files]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args(argv)
    logs.configure(level="WARNING")
    stages: dict[str, list[float]] = {
        k: [] for k in ("rows", "analysis", "supersession", "near-dups", "near-dups from text")
    }
    with tempfile.TemporaryDirectory() as tmp:
        make_tree(Path(tmp) / "tree", args.files, per_dir=args.files)
        store = IndexStore(Path(tmp) / "index.db")
        Syncer(store).sync_tree(str(Path(tmp) / "tree"))
        folder = str(Path(tmp) / "tree" / "project-0000" / "memory")
        sql = (
            f"SELECT {queries.FILE_COLUMNS} FROM files WHERE directory = ? "
            "AND kind = 'memory' AND error IS NULL ORDER BY filename"
        )
        for _ in range(args.repeat):
            dated.term_set.cache_clear()
            files = _timed(stages["rows"], _rows, store.conn.execute(sql, (folder,)))
            docs = _timed(stages["analysis"], _analyses, files)
            stored = [manifest.to_candidate(f, d) for f, d in zip(files, docs, strict=True)]
            stale = _timed(stages["supersession"], supersession.superseded_by, stored)
            _timed(stages["near-dups"], relations.twins_of, stored, stale)
            bare = [manifest.to_candidate(f) for f in files]
            _timed(stages["near-dups from text"], relations.twins_of, bare, stale)
        store.close()
    print(f"manifest of a {args.files}-file folder, median of {args.repeat} rebuilds")
    print(f"{'stage':<22}{'ms':>8}")
    for name, spent in stages.items():
        print(f"{name:<22}{statistics.median(spent):>8.1f}")
    total = sum(statistics.median(s) for k, s in stages.items() if k != "near-dups from text")
    print(f"{'total':<22}{total:>8.1f}")
    print(f"loadavg {Path('/proc/loadavg').read_text().split()[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
