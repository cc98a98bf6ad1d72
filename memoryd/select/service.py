"""Selection as the daemon and the in-process CLI both run it.

One :class:`~memoryd.select.selector.Selector` per process, wired to the
configured Claude ranker (if any) and to a telemetry sink that writes through
whoever owns the index's write connection.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import Any

from memoryd.config import Config
from memoryd.durations import parse_duration
from memoryd.indexer import queries
from memoryd.indexer.store import IndexStore
from memoryd.ipc import params as p
from memoryd.select import telemetry
from memoryd.select.selector import Selector


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


def make_selector(cfg: Config, sink: Callable[[dict[str, Any]], None]) -> Selector:
    return Selector(sink=sink, log_queries=cfg.log_queries, claude_factory=claude_factory(cfg))


def run_stats(conn: sqlite3.Connection, params: dict[str, Any]) -> dict[str, Any]:
    """The ``stats`` method: aggregates over ``selector_runs`` since ``since`` (default 7d)."""
    p.reject_unknown(params, ("since",))
    window = parse_duration(params.get("since", "7d"), "since")
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
