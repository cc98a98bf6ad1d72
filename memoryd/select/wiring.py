"""The selector's wiring: one :class:`~memoryd.select.selector.Selector` per process.

It gets the configured Claude ranker (if any); its runs are recorded by
:meth:`memoryd.service.MemoryService.select` through :func:`record_runs` on
whichever side owns the index's write connection, and ``stats`` summarises
them (:func:`run_stats`).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memoryd.config import Config
from memoryd.indexer import queries
from memoryd.indexer.store import IndexStore
from memoryd.replies import SelectResult, StatsReply
from memoryd.select import telemetry
from memoryd.select.selector import Selector
from memoryd.select.types import StatsRequest, parse_select


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


def record_runs(
    store: IndexStore, records: Sequence[telemetry.RunRecord], retention: telemetry.Retention
) -> None:
    """Write telemetry rows in one transaction (one select's, or those held back while the
    index could not be written), deleting those past ``retention`` in the same one."""
    with store.transaction() as conn:
        telemetry.insert(conn, *records)
        retention.prune(conn, len(records))


def retention_of(cfg: Config) -> telemetry.Retention:
    return telemetry.Retention(cfg.telemetry_keep_runs, cfg.telemetry_keep_days)


def make_selector(cfg: Config) -> Selector:
    return Selector(log_queries=cfg.log_queries, claude_factory=claude_factory(cfg))


def select_unrecorded(
    selector: Selector, conn: sqlite3.Connection, params: Mapping[str, Any]
) -> SelectResult:
    """``select`` over a directory indexed already, with no telemetry: for benchmarks and tests."""
    req = parse_select(params)
    return selector.run(conn, req, req.dir, "unrecorded").result


def run_stats(conn: sqlite3.Connection, req: StatsRequest) -> StatsReply:
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
    return telemetry.stats(conn, since, window, manifest)
