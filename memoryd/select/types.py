"""The ``select`` and ``stats`` requests as checked types, and what one selector run found.

A request is parsed once where it enters memoryd; every mistake is an
``invalid_params`` error naming the field. Only the standard library and the
param checks are imported here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memoryd import requests as p
from memoryd.durations import parse_duration
from memoryd.methods import RANKERS, SELECT, STATS
from memoryd.operations import directory_param
from memoryd.replies import SelectResult

MAX_QUERY = 20_000
MAX_RESULTS = 5
PARAMS = SELECT.accepts()
MIN_TIMEOUT_MS = 1
MAX_TIMEOUT_MS = 600_000


@dataclass(frozen=True)
class SelectRequest:
    """A checked ``select`` request; ``dir`` is still as given (the index resolves it)."""

    query: str
    dir: str
    session_id: str | None = None
    surfaced: tuple[str, ...] = ()
    recent_tools: tuple[str, ...] = ()
    limit: int = MAX_RESULTS
    ranker: str = "auto"
    allow_secrets: bool = False
    timeout_ms: int | None = None


def parse_select(params: Mapping[str, Any]) -> SelectRequest:
    """The request ``params`` make, or the first ``invalid_params`` error in field order."""
    p.reject_unknown(params, PARAMS)
    query = p.required_string(params, "query", max_len=MAX_QUERY)
    session_id = p.string(params, "session_id", max_len=200)
    surfaced = tuple(p.string_list(params, "surfaced"))
    recent_tools = tuple(p.string_list(params, "recent_tools"))
    limit = p.integer(params, "limit", default=MAX_RESULTS, minimum=1, maximum=MAX_RESULTS)
    ranker = p.choice(params, "ranker", RANKERS, "auto")
    allow_secrets = p.boolean(params, "allow_secrets")
    timeout_ms = (
        p.integer(params, "timeout_ms", default=0, minimum=MIN_TIMEOUT_MS, maximum=MAX_TIMEOUT_MS)
        if params.get("timeout_ms") is not None
        else None
    )
    return SelectRequest(
        query=query,
        dir=directory_param(params),
        session_id=session_id,
        surfaced=surfaced,
        recent_tools=recent_tools,
        limit=limit,
        ranker=ranker,
        allow_secrets=allow_secrets,
        timeout_ms=timeout_ms,
    )


@dataclass(frozen=True)
class StatsRequest:
    """A checked ``stats`` request: the window of runs to summarise, in seconds."""

    window_s: float = 7 * 86400.0


def parse_stats(params: Mapping[str, Any]) -> StatsRequest:
    p.reject_unknown(params, STATS.accepts())
    return StatsRequest(parse_duration(params.get("since", "7d"), "since"))


@dataclass(frozen=True)
class Selection:
    """What one selector run found; the judge asked (used or not), the memories it was shown,
    its time and tokens; what each rule kept out (:func:`.telemetry.left_out`)."""

    result: SelectResult
    tokens: tuple[int, int] = (0, 0)
    judge: str | None = None
    shortlist: int = 0
    judge_ms: float | None = None
    left_out: Mapping[str, object] | None = None
