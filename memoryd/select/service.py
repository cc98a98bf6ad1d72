"""Selection as the daemon and the in-process CLI both run it.

One :class:`~memoryd.select.selector.Selector` per process, wired to the
configured Claude ranker (if any). :func:`run_select` parses the request,
has the index resolve its directory, runs the selector and records exactly
one telemetry row through the index's writer, failed runs included (that is
why it, not the socket handler, parses ``select``'s params).
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from memoryd.config import Config
from memoryd.errors import MemorydError
from memoryd.indexer import queries
from memoryd.indexer.store import IndexStore
from memoryd.select import telemetry
from memoryd.select.selector import Selector
from memoryd.select.types import SelectResult, StatsRequest, parse_select


class SelectIndex(Protocol):
    """What ``select`` needs of an index: a reader, directories made current, a run log."""

    def reader(self) -> sqlite3.Connection: ...

    def select_dir(self, raw: str) -> str:
        """``raw`` as a real directory whose index is (or is kept) up to date."""
        ...

    def record_run(self, record: dict[str, Any]) -> None: ...


def claude_factory(cfg: Config) -> Callable[[], Any] | None:
    """A lazy, shared ClaudeRanker when an API key is configured; None otherwise."""
    settings = cfg.anthropic
    if not settings.api_key:
        return None
    ranker: Any = None

    def get() -> Any:
        nonlocal ranker
        if ranker is None:
            from memoryd.select.claude import ClaudeRanker, ClaudeSettings  # noqa: PLC0415

            ranker = ClaudeRanker(
                ClaudeSettings(
                    api_key=settings.api_key or "",
                    model=settings.model,
                    base_url=settings.base_url,
                    timeout_s=settings.timeout,
                )
            )
        return ranker

    return get


def record_run(store: IndexStore, record: dict[str, Any]) -> None:
    with store.transaction() as conn:
        telemetry.insert(conn, record)


def make_selector(cfg: Config) -> Selector:
    return Selector(log_queries=cfg.log_queries, claude_factory=claude_factory(cfg))


def select_unrecorded(
    selector: Selector, conn: sqlite3.Connection, params: Mapping[str, Any]
) -> SelectResult:
    """``select`` over a directory indexed already, with no telemetry: for benchmarks and tests."""
    req = parse_select(params)
    return selector.run(conn, req, req.dir, "unrecorded").result


def run_select(selector: Selector, index: SelectIndex, params: Mapping[str, Any]) -> SelectResult:
    """``select``: parse, resolve, select and record; errors are recorded, then re-raised."""
    started = time.perf_counter()
    run_id = uuid.uuid4().hex[:16]
    raw_query = params.get("query")
    query = raw_query if isinstance(raw_query, str) else ""
    directory: str | None = None

    def record(**fields: Any) -> None:
        run = telemetry.make_record(
            run_id=run_id,
            directory=directory,
            query=query,
            log_queries=selector.log_queries,
            latency_ms=(time.perf_counter() - started) * 1000,
            **fields,
        )
        telemetry.emit(run)
        index.record_run(run)

    try:
        req = parse_select(params)
        directory = index.select_dir(req.dir)
        selection = selector.run(index.reader(), req, directory, run_id)
    except MemorydError as exc:
        record(ranker=None, error=getattr(exc, "code", type(exc).__name__))
        raise
    except Exception:
        record(ranker=None, error="internal")
        raise
    result = selection.result
    result["latency_ms"] = round((time.perf_counter() - started) * 1000, 3)
    record(
        ranker=result["ranker"],
        fallback=result["fallback"],
        candidates=result["candidates"],
        excluded=result["excluded"],
        selected=[s["filename"] for s in result["selected"]],
        dropped_unknown=result["dropped_unknown"],
        tokens_in=selection.tokens[0],
        tokens_out=selection.tokens[1],
    )
    return result


def run_stats(conn: sqlite3.Connection, req: StatsRequest) -> dict[str, Any]:
    """The ``stats`` method: aggregates over ``selector_runs`` in the request's window."""
    window = req.window_s
    since = time.time() - window
    dirs = [
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT dir FROM selector_runs WHERE at >= ? AND dir IS NOT NULL", (since,)
        )
    ]
    manifest = {d: [f.filename for f in queries.memories_in(conn, d)] for d in dirs}
    result = telemetry.stats(conn, since, manifest)
    result["since"] = queries.iso_utc(since)
    result["window_s"] = window
    return result
