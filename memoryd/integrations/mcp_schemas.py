"""Output schemas of the MCP tools: what each tool returns, for the client and the model.

Each is a TypedDict the ``mcp`` library turns into the tool's ``outputSchema``
and validates the daemon's answer against. The fields an agent acts on are
spelled out; ``extra="allow"`` keeps the daemon's other fields (telemetry,
counts) in the structured result instead of silently dropping them, so a newer
daemon never breaks an older MCP server.
"""

from __future__ import annotations

from typing import Any, NotRequired

from pydantic import ConfigDict
from typing_extensions import TypedDict

_OPEN = ConfigDict(extra="allow")


# The fields of memoryd.select.types.SelectedMemory, restated: pydantic on Python
# 3.11 takes only typing_extensions TypedDicts, and the light select types stay
# on the standard library so the CLI starts fast. (A docstring here would reach
# the model as the schema's description.)
class SelectedMemory(TypedDict):
    """One memory worth reading for the query (``staleness``: what it cites that changed)."""

    __pydantic_config__ = _OPEN  # type: ignore[misc]
    filename: str
    path: str
    name: str | None
    description: str | None
    type: str | None
    mtime: str
    age_days: float
    score: float | None
    staleness: NotRequired[dict[str, Any] | None]


class SelectResult(TypedDict):
    """Up to five memories; empty means nothing clearly helps (``note``: why, for a bad folder)."""

    __pydantic_config__ = _OPEN  # type: ignore[misc]
    run_id: str
    ranker: str
    selected: list[SelectedMemory]
    candidates: int
    fallback: str | None
    note: NotRequired[str | None]


class LoadLastResult(TypedDict):
    """The newest session memory of a project, or ``found: false`` with a message."""

    __pydantic_config__ = _OPEN  # type: ignore[misc]
    found: bool
    path: NotRequired[str]
    filename: NotRequired[str]
    content: NotRequired[str]
    resume_line: NotRequired[str]
    time_since_last_session_hours: NotRequired[float | None]
    message: NotRequired[str]
    skipped: list[dict[str, str]]


class SaveResult(TypedDict):
    """Where the session memory was written and whether it is new."""

    __pydantic_config__ = _OPEN  # type: ignore[misc]
    path: str
    filename: str
    created: bool
    schema_version: str
    dir: str


class ContextResult(TypedDict):
    """The cited brief of earlier sessions, with what it was built from."""

    __pydantic_config__ = _OPEN  # type: ignore[misc]
    text: str
    status: str
    scope: str
    findings: list[dict[str, Any]]
    sessions_read: list[str]
    budget_tokens: int


class RootStatus(TypedDict):
    """A watched folder: where it came from, how many files, how it is watched."""

    __pydantic_config__ = _OPEN  # type: ignore[misc]
    path: str
    files: int
    errors: int
    watcher: str
    origin: NotRequired[str]


class StatusResult(TypedDict):
    """The daemon's health."""

    __pydantic_config__ = _OPEN  # type: ignore[misc]
    version: str
    pid: int
    state: str
    roots: list[RootStatus]
    last_event: str | None
