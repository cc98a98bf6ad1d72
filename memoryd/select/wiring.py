"""The selector's wiring: its settings and judges from the config, its telemetry rows written,
and ``stats`` over them."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memoryd.config import Config
from memoryd.indexer import queries
from memoryd.indexer.store import IndexStore
from memoryd.methods import Select
from memoryd.params import decode
from memoryd.replies import SelectResult, StatsReply
from memoryd.select import telemetry
from memoryd.select.judge import Judge
from memoryd.select.selector import Selector


def judge_factories(cfg: Config) -> dict[str, Callable[[], Judge]]:
    """The configured judges' factories, the one ``auto`` asks first."""
    judges: dict[str, Callable[[], Judge]] = {}
    oai, anth = cfg.openai, cfg.anthropic
    if oai.base_url and oai.model:
        base_url, model = oai.base_url, oai.model

        def openai() -> Judge:
            from memoryd.select.openai_compat import OpenAIJudge, OpenAISettings  # noqa: PLC0415

            return OpenAIJudge(OpenAISettings(base_url, model, oai.api_key, oai.timeout))

        judges["openai"] = openai
    if anth.api_key:
        key = anth.api_key

        def claude() -> Judge:
            from memoryd.select.claude import ClaudeJudge, ClaudeSettings  # noqa: PLC0415

            return ClaudeJudge(ClaudeSettings(key, anth.model, anth.base_url, anth.timeout))

        judges["anthropic"] = claude
    return judges


def record_runs(
    store: IndexStore, records: Sequence[telemetry.RunRecord], retention: telemetry.Retention
) -> None:
    """Write telemetry rows, and delete those past ``retention``, in one transaction."""
    with store.transaction() as conn:
        telemetry.insert(conn, *records)
        retention.prune(conn, len(records))


def retention_of(cfg: Config) -> telemetry.Retention:
    return telemetry.Retention(cfg.telemetry_keep_runs, cfg.telemetry_keep_days)


def make_selector(cfg: Config) -> Selector:
    return Selector(**selector_settings(cfg))


# dict[str, Any]: keyword arguments for Selector, of several types.
def selector_settings(cfg: Config) -> dict[str, Any]:
    """:class:`Selector`'s keyword arguments from the config (at start and at every SIGHUP)."""
    return {
        "log_queries": cfg.log_queries,
        "judges": judge_factories(cfg),
        "shortlist": cfg.shortlist,
    }


def select_unrecorded(
    selector: Selector, conn: sqlite3.Connection, params: Mapping[str, Any]
) -> SelectResult:
    """``select`` over a directory indexed already, with no telemetry: for benchmarks and tests."""
    req = decode(Select, params)
    return selector.run(conn, req, req.dir, "unrecorded").result


def run_stats(conn: sqlite3.Connection, window: float) -> StatsReply:
    """The ``stats`` method: aggregates over ``selector_runs`` in the last ``window`` seconds."""
    since = time.time() - window
    dirs = [
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT dir FROM selector_runs WHERE at >= ? AND dir IS NOT NULL", (since,)
        )
    ]
    manifest = {d: [f.filename for f in queries.memories_in(conn, d)] for d in dirs}
    return telemetry.stats(conn, since, window, manifest)
