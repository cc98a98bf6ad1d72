"""One record per selector run (errors included), as a ``selector.run`` log line and a
``selector_runs`` row, and ``stats`` over the rows.

The query is kept as a hash and a length unless ``log_queries``; ``detail_json``
keeps the picks' scores and what each rule left out (``memoryd why`` reads it).
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
import time
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

import structlog

from memoryd import logs
from memoryd.indexer.queries import iso_utc
from memoryd.indexer.secrets import redact
from memoryd.replies import RankerStats, SelectResult, StatsReply

if TYPE_CHECKING:
    from memoryd.select.local import Scored

log = structlog.get_logger("memoryd.selector")


@dataclass(frozen=True)
class Selection:
    """One run's reply, the judge asked (used or not) with its shortlist, time and tokens,
    and what each rule kept out."""

    result: SelectResult
    tokens: tuple[int, int] = (0, 0)
    judge: str | None = None
    shortlist: int = 0
    judge_ms: float | None = None
    left_out: Mapping[str, object] | None = None


class RunRecord(TypedDict):
    """A ``selector_runs`` row as :func:`make_record` builds it (JSON columns encoded)."""

    run_id: str
    at: float
    dir: str | None
    ranker: str | None
    fallback: str | None
    error: str | None
    candidates: int
    excluded_json: str
    selected_json: str
    dropped_unknown_json: str
    latency_ms: float
    tokens_in: int
    tokens_out: int
    query_hash: str
    query_len: int
    query: str | None
    judge: str | None
    shortlist: int
    judge_ms: float | None
    session_id: str | None
    detail_json: str


_COLUMNS = list(RunRecord.__annotations__)
_INSERT = (
    f"INSERT INTO selector_runs ({', '.join(_COLUMNS)}) "
    f"VALUES ({', '.join(':' + c for c in _COLUMNS)})"
)
_OPTIONAL = ("session_id", "query")  # left out of the log line when None
NAMES_KEPT = 20  # per rule, the file names a row keeps (the count is in ``excluded``)


def left_out(
    rules: Mapping[str, Collection[str]], below: Sequence[Scored], unpicked: int
) -> dict[str, object]:
    """What each rule kept out (names), the best misses (``below``) and how many were not picked."""
    out: dict[str, object] = {k: sorted(v)[:NAMES_KEPT] for k, v in rules.items() if v}
    out["below_cut"] = [[s.filename, s.score] for s in below]
    out["below_cut_count"] = unpicked
    return out


def query_hash(query: str) -> str:
    return hashlib.sha256(query.encode()).hexdigest()[:16]


def make_record(
    *,
    run_id: str,
    directory: str | None,
    query: str,
    session_id: str | None,
    log_queries: bool,
    latency_ms: float,
    selection: Selection | None = None,
    error: str | None = None,
) -> RunRecord:
    """The row of a run that answered ``selection`` or failed with ``error``, JSON columns
    encoded; the picks' scores go in ``detail_json`` (None: a judge's pick)."""
    result = selection.result if selection is not None else None
    picked = result["selected"] if result is not None else []
    judge_ms = selection.judge_ms if selection is not None else None
    return {
        "run_id": run_id,
        "at": time.time(),
        "dir": directory,
        "ranker": result["ranker"] if result is not None else None,
        "fallback": result["fallback"] if result is not None else None,
        "error": error,
        "candidates": result["candidates"] if result is not None else 0,
        "excluded_json": json.dumps(result["excluded"] if result else {}, sort_keys=True),
        "selected_json": json.dumps([s["filename"] for s in picked]),
        "dropped_unknown_json": json.dumps(result["dropped_unknown"] if result else []),
        "latency_ms": round(latency_ms, 3),
        "tokens_in": selection.tokens[0] if selection is not None else 0,
        "tokens_out": selection.tokens[1] if selection is not None else 0,
        "query_hash": query_hash(query),
        "query_len": len(query),
        "query": redact(query) if log_queries else None,
        "judge": selection.judge if selection is not None else None,
        "shortlist": selection.shortlist if selection is not None else 0,
        "judge_ms": None if judge_ms is None else round(judge_ms, 3),
        "session_id": session_id,
        "detail_json": json.dumps(
            {
                "scores": [s["score"] for s in picked],
                "left_out": (selection.left_out if selection is not None else None) or {},
            }
        ),
    }


def emit(record: RunRecord) -> None:
    """The ``selector.run`` log event, built only when INFO is logged."""
    if not logs.enabled("info"):
        return
    fields: dict[str, object] = {
        k: v
        for k, v in record.items()
        if not k.endswith("_json") and k != "at" and (v is not None or k not in _OPTIONAL)
    }
    for k in ("selected", "excluded", "dropped_unknown"):
        fields[k] = json.loads(record[f"{k}_json"])  # type: ignore[literal-required]
    log.info("selector.run", **fields)


def insert(conn: sqlite3.Connection, *records: RunRecord) -> None:
    """Write rows made by :func:`make_record`."""
    conn.executemany(_INSERT, records)


class Retention:
    """How many ``selector_runs`` rows are kept, and how long: the age checked at every write,
    the count once every tenth of it has been written."""

    def __init__(self, keep_runs: int, keep_days: float) -> None:
        self.keep_runs = keep_runs
        self.keep_days = keep_days
        self._written = keep_runs  # the first write checks the count

    def prune(self, conn: sqlite3.Connection, written: int) -> None:
        """Delete what is past the limits after ``written`` new rows."""
        cutoff = time.time() - self.keep_days * 86400
        conn.execute("DELETE FROM selector_runs WHERE at < ?", (cutoff,))
        self._written += written
        if self._written >= max(1, self.keep_runs // 10):
            self._written = 0
            cut = conn.execute(
                "SELECT at FROM selector_runs ORDER BY at DESC LIMIT 1 OFFSET ?",
                (self.keep_runs - 1,),
            ).fetchone()
            if cut is not None:
                conn.execute("DELETE FROM selector_runs WHERE at < ?", (cut[0],))


def _percentile(values: list[float], pct: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    k = max(0, math.ceil(pct / 100 * len(ordered)) - 1)
    return ordered[k]


def stats(
    conn: sqlite3.Connection,
    since: float,
    window_s: float,
    manifest: dict[str, list[str]] | None = None,
) -> StatsReply:
    """Aggregate runs since ``since``; ``manifest``: each directory seen -> its memories."""
    rows = conn.execute(
        "SELECT dir, ranker, fallback, error, selected_json, dropped_unknown_json, latency_ms, "
        "coalesce(judge, ranker), shortlist, judge_ms, tokens_in, tokens_out, fallback "
        "FROM selector_runs WHERE at >= ? ORDER BY at",
        (since,),
    ).fetchall()
    judged = [r[7:] for r in rows if r[1] is not None]
    runs = len(rows)
    latencies = [r[6] for r in rows if r[6] is not None]
    fallbacks: Counter[str] = Counter(r[2] for r in rows if r[2])
    errors: Counter[str] = Counter(r[3] for r in rows if r[3])
    picked: Counter[tuple[str, str]] = Counter()
    empty = dropped = 0
    for r in rows:
        selected = json.loads(r[4] or "[]")
        empty += 0 if selected else 1
        dropped += len(json.loads(r[5] or "[]"))
        picked.update((r[0], name) for name in selected)
    never: dict[str, list[str]] = {}
    for directory, names in (manifest or {}).items():
        chosen = {name for d, name in picked if d == directory}
        never[directory] = sorted(set(names) - chosen)
    ok_runs = runs - sum(errors.values())
    return {
        "since": iso_utc(since),
        "runs": runs,
        "empty_rate": round(empty / runs, 4) if runs else None,
        "latency_ms": {"p50": _percentile(latencies, 50), "p95": _percentile(latencies, 95)},
        "fallback_rate": {k: round(v / runs, 4) for k, v in sorted(fallbacks.items())},
        "errors": dict(sorted(errors.items())),
        "ranker_runs": dict(Counter(r[1] for r in rows if r[1])),
        "dropped_unknown": dropped,
        "most_selected": [
            {"dir": d, "filename": n, "count": c} for (d, n), c in picked.most_common(10)
        ],
        "never_selected": never,
        "answered_runs": ok_runs,
        "window_s": window_s,
        "rankers": _per_ranker(judged),
    }


def _per_ranker(rows: list[tuple[Any, ...]]) -> dict[str, RankerStats]:
    """Per ranker asked (a judge whether or not its answer was used, else ``local``)."""
    grouped: dict[str, list[tuple[Any, ...]]] = {}
    for row in rows:
        grouped.setdefault(row[0], []).append(row)
    out: dict[str, RankerStats] = {}
    for name, runs in sorted(grouped.items()):
        sizes = [r[1] for r in runs if r[1]]
        waits = [r[2] for r in runs if r[2] is not None]
        out[name] = {
            "runs": len(runs),
            "shortlist_mean": round(sum(sizes) / len(sizes), 2) if sizes else None,
            "judge_ms": {"p50": _percentile(waits, 50), "p95": _percentile(waits, 95)},
            "tokens_in": sum(r[3] or 0 for r in runs),
            "tokens_out": sum(r[4] or 0 for r in runs),
            "fallbacks": dict(sorted(Counter(r[5] for r in runs if r[5]).items())),
        }
    return out
