"""The ``select`` request and result as types, so the selector never reads a wire dict.

A request is parsed once, where it enters memoryd (the socket handler, the
CLI's in-process fallback), into :class:`SelectRequest`; every mistake is the
same ``invalid_params`` error, naming the field, that the wire has always
given. The result is a :class:`~memoryd.replies.SelectResult`, whose keys
(in this order) are the documented reply of ``select``.

Only the standard library and the param checks are imported here, so a
client may build requests without loading the index or the rankers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memoryd import requests as p
from memoryd.durations import parse_duration
from memoryd.methods import RANKERS, SELECT, STATS
from memoryd.operations import Request, directory_param
from memoryd.replies import SelectResult

MAX_QUERY = 20_000
MAX_RESULTS = 5
PARAMS = SELECT.accepts()
MIN_TIMEOUT_MS = 1
MAX_TIMEOUT_MS = 600_000


@dataclass(frozen=True)
class SelectRequest(Request[SelectResult]):
    """A checked ``select`` request; ``dir`` is still as given (the index resolves it)."""

    METHOD = "select"
    query: str
    dir: str
    session_id: str | None = None
    surfaced: tuple[str, ...] = ()
    recent_tools: tuple[str, ...] = ()
    limit: int = MAX_RESULTS
    ranker: str = "auto"
    allow_secrets: bool = False
    timeout_ms: int | None = None

    def params(self) -> Mapping[str, object]:
        return {
            "query": self.query,
            "dir": self.dir,
            "session_id": self.session_id,
            "surfaced": list(self.surfaced),
            "recent_tools": list(self.recent_tools),
            "limit": self.limit,
            "ranker": self.ranker,
            "allow_secrets": self.allow_secrets,
            "timeout_ms": self.timeout_ms,
        }


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
    """What one selector run found, and what its judge (if one was asked) cost."""

    result: SelectResult
    tokens: tuple[int, int] = (0, 0)
    judge: str | None = None
    """The judge asked (whether or not its answer was used)."""
    shortlist: int = 0
    """Memories the judge was shown."""
    judge_ms: float | None = None
    left_out: Mapping[str, object] | None = None
    """Per rule, the file names it kept out (for telemetry, :func:`.telemetry.left_out`)."""
