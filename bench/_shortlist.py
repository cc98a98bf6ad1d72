"""Recall of the local ranker's shortlist: the share of gold memories among its top K.

A judge that reads a shortlist can only pick what is in it, so this recall is
the most any judge given the local ranker's top K can reach. The shortlist is
what the selector ranks after every rule (surfaced, secret-flagged, usage docs
of tools in use and superseded memories are out), ordered by the local
ranker's score, ties by filename (memories the query does not reach score 0
and come last). Gold is pooled over every query that has some.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.methods import Select
from memoryd.params import decode
from memoryd.select.local import LocalRanker
from memoryd.select.selector import Selector, _Pool

KS = (5, 8)
"""Shortlist sizes reported: the issue's default shortlist is 8."""


def indexed(
    trees: Sequence[Path], workdir: Path, ranker: LocalRanker | None = None
) -> tuple[IndexStore, Selector]:
    """One real index of ``trees`` in ``workdir`` and a Selector over it (``ranker`` swapped in)."""
    store = IndexStore(workdir / "index.db")
    syncer = Syncer(store)
    for tree in trees:
        syncer.sync_tree(str(tree))
    selector = Selector()
    if ranker is not None:
        selector.local = ranker
    return store, selector


def shortlist(
    selector: Selector, conn: sqlite3.Connection, q: Mapping[str, Any], folder: Path, k: int
) -> list[str]:
    """The local ranker's top ``k`` eligible memories for query ``q`` over ``folder``."""
    req = decode(
        Select,
        {
            "query": q["query"],
            "dir": str(folder),
            "surfaced": q["surfaced"],
            "recent_tools": q["recent_tools"],
            "ranker": "local",
        },
    )
    manifest = selector.manifests.get(conn, req.dir)
    pool = _Pool.of(conn, manifest, req, req.dir)
    # Scored as the ranker scores them for an answer: shown memories count in the statistics.
    seen = [c for c in pool.surfaced if c.filename not in pool.stale]
    scores = selector.local.scores(req.query, pool.cands + seen)
    return sorted(pool.files, key=lambda fn: (-scores.get(fn, 0.0), fn))[:k]


@dataclass(frozen=True, slots=True)
class Reach:
    """Gold memories of some queries, and how many of them each shortlist size held."""

    gold: int
    held: Mapping[int, int]

    def recall(self, k: int) -> float:
        return self.held[k] / self.gold if self.gold else 0.0

    def __add__(self, other: Reach) -> Reach:
        return Reach(self.gold + other.gold, {k: self.held[k] + other.held[k] for k in self.held})


NOTHING = Reach(0, dict.fromkeys(KS, 0))


def reach(
    selector: Selector,
    conn: sqlite3.Connection,
    queries: Iterable[Mapping[str, Any]],
    folder_of: Callable[[str], Path],
) -> Reach:
    """Pooled gold and shortlist hits over ``queries`` (``folder_of(project)`` is its folder)."""
    total = NOTHING
    for q in queries:
        gold = set(q["gold"])
        if not gold:
            continue
        top = shortlist(selector, conn, q, folder_of(q["project"]), max(KS))
        total += Reach(len(gold), {k: len(gold & set(top[:k])) for k in KS})
    return total


def render_reach(rows: Sequence[tuple[str, Reach]]) -> str:
    lines = [
        "stage-1 shortlist recall (gold memories among the local ranker's top K eligible;"
        " no judge given that shortlist can exceed it)",
        f"{'':<28}{'gold':>6}" + "".join(f"{'@' + str(k):>8}" for k in KS),
    ]
    for label, r in rows:
        lines.append(f"{label:<28}{r.gold:>6}" + "".join(f"{r.recall(k):>8.3f}" for k in KS))
    return "\n".join(lines)


def as_json(r: Reach) -> dict[str, Any]:
    return {"gold": r.gold, **{f"recall@{k}": r.recall(k) for k in KS}}
