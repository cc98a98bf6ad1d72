"""The compaction report's JSON shape (``report.json``), which the Markdown is rendered from."""

from __future__ import annotations

from typing import NotRequired, TypedDict

from memoryd.replies import Size
from memoryd.staleness.results import StaleMemory


class SupersededMemory(TypedDict):
    """A memory or session a newer one supersedes (``superseded_by`` None: none named)."""

    file: str
    superseded_by: str | None


class OldSessions(TypedDict):
    """One project's sessions recorded before the cutoff, and those a later one completes."""

    project: str
    count: int
    bytes: int
    first: str
    last: str
    files: list[str]
    superseded: list[SupersededMemory]


class StaleWork(TypedDict):
    """A project whose newest session is still open and untouched since the cutoff."""

    project: str
    file: str
    status: str | None
    last_checkpoint: object
    """As the session's frontmatter gives it."""
    last_touched: str
    age_days: float


class BrokenFile(TypedDict):
    file: str
    reason: str


class LinkLine(TypedDict):
    line: int
    target: str


class IndexHealth(TypedDict):
    """A folder's MEMORY.md findings; only ``missing`` and ``path`` when there is none."""

    missing: bool
    path: str
    lines: NotRequired[int]
    bytes: NotRequired[int]
    oversize: NotRequired[bool]
    dead_links: NotRequired[list[LinkLine]]
    unlisted: NotRequired[list[str]]
    no_hook: NotRequired[list[LinkLine]]


class DuplicateGroup(TypedDict):
    match: str
    files: list[str]


class SecretLine(TypedDict):
    line: int
    kind: str


class SecretFile(TypedDict):
    file: str
    lines: list[SecretLine]


class Oversized(Size):
    file: str


class Selected(TypedDict):
    file: str
    count: int


class Usage(TypedDict):
    runs: int
    most_selected: list[Selected]
    never_selected: list[str]


class DirectoryReport(TypedDict):
    path: str
    files: int
    bytes: int
    old_sessions: list[OldSessions]
    stale_work: list[StaleWork]
    broken_files: list[BrokenFile]
    memory_index: IndexHealth | None
    duplicates: list[DuplicateGroup]
    superseded_memories: list[SupersededMemory]
    secrets: list[SecretFile]
    oversized: list[Oversized]
    usage: Usage | None
    code_drift: list[StaleMemory]


class Report(TypedDict):
    notice: str
    generated_at: str
    date: str
    stamp: str
    older_than_days: float
    roots: list[str]
    summary: dict[str, int]
    directories: list[DirectoryReport]
