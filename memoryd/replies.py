"""The reply of every socket method, as a type: what ``result`` holds (docs/protocol.md).

Only :mod:`typing` and the sibling type modules are imported: the client names them too.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

from memoryd.check_replies import CheckoutFound, Verdict
from memoryd.file_entries import FileError, SyncCounts


class RootStatus(TypedDict):
    path: str
    origin: str
    forget_after: str | None
    watcher: str
    files: int
    errors: int
    recrawls: int
    last_recrawl: LastReconcile | None
    watcher_note: NotRequired[str]
    checkout: NotRequired[CheckoutFound | None]


class LastReconcile(TypedDict):
    at: str
    reason: str
    seconds: float
    drift: int


class LastReload(TypedDict):
    at: str
    applied: bool
    reason: str | None


class IndexingProgress(TypedDict):
    phase: Literal["indexing", "done"]
    done: int
    total: int
    seconds: float
    rate_per_s: int | None


class IndexHealth(TypedDict):
    state: str
    reason: str | None
    since: str | None
    failed_writes: int
    retry_in_s: float | None
    pending_saves: list[str]
    recovered_at: str | None


class ReportSchedule(TypedDict, total=False):
    """When the daemon writes reports (a cron line, or an interval the environment sets),
    or why it writes none."""

    cron: str
    interval_s: float
    error: str


class LastReport(TypedDict):
    at: str
    path: str
    json: str
    trigger: str
    seconds: float


class ReconcileFailure(TypedDict):
    at: str
    reason: str
    error: str


class Alarm(TypedDict):
    """Something that quietly stopped working (``hook``, ``selection``, ``watcher``, ``index``)."""

    kind: str
    message: str


class FeatureStatus(TypedDict, total=False):
    """The entries features add to ``status`` (the reporter, upkeep and alarms)."""

    report_schedule: ReportSchedule
    last_report: LastReport
    last_reconcile_error: NotRequired[ReconcileFailure]
    """Absent until a full reconcile failed."""
    alarms: list[Alarm]


class StatusReply(FeatureStatus):
    """What the daemon is doing; features add their entries (:class:`FeatureStatus`)."""

    protocol: int
    capabilities: list[str]
    version: str
    pid: int
    state: str
    uptime_s: float
    socket: str
    activated: bool
    db: str
    roots: list[RootStatus]
    last_event: str | None
    last_reconcile: LastReconcile | None
    drift_fixed_total: int
    indexing: IndexingProgress | None
    writer_queue: int
    index: IndexHealth
    connections: int
    connections_refused: int
    last_reload: NotRequired[LastReload]


class Size(TypedDict):
    bytes: int
    lines: int


class FileSummary(TypedDict):
    filename: str
    path: str
    kind: str
    name: str | None
    description: str | None
    type: str | None
    mtime: str
    size: int
    warning: NotRequired[str]
    secret_lines: NotRequired[list[int]]
    superseded_by: NotRequired[str | None]
    oversized: NotRequired[Size]
    staleness: NotRequired[Verdict | None]


class ListReply(TypedDict):
    dir: str
    files: list[FileSummary]
    errors: list[FileError]


class ReindexReply(SyncCounts):
    dirs: list[str]


class Watched(TypedDict):
    dir: str
    root: str | None
    added: bool
    origin: str | None


class WatchReply(Watched):
    watcher: str


class UnwatchReply(TypedDict):
    dir: str
    removed: bool
    origin: str
    files_forgotten: int
    returns_at_restart: bool


class ShutdownReply(TypedDict):
    stopping: bool
    pid: int


class SelectedMemory(TypedDict):
    filename: str
    path: str
    name: str | None
    description: str | None
    type: str | None
    mtime: str
    age_days: float
    score: float | None
    staleness: Verdict | None


class Excluded(TypedDict):
    surfaced: int
    index: int
    tool_docs: int
    tool_doc_files: list[str]
    secrets: int
    duplicates_of_surfaced: int
    superseded: int
    vanished: int


Ranker = Literal["local", "anthropic", "openai"]  # who picked a select's answer


class SelectResult(TypedDict):
    run_id: str
    ranker: Ranker
    selected: list[SelectedMemory]
    candidates: int
    excluded: Excluded
    dropped_unknown: list[str]
    fallback: str | None
    note: str | None
    memory_folder: bool
    latency_ms: float


class MostSelected(TypedDict):
    dir: str
    filename: str
    count: int


class RankerStats(TypedDict):
    runs: int
    shortlist_mean: float | None
    judge_ms: dict[str, float | None]
    tokens_in: int
    tokens_out: int
    fallbacks: dict[str, int]


class StatsReply(TypedDict):
    since: str
    runs: int
    empty_rate: float | None
    latency_ms: dict[str, float | None]
    fallback_rate: dict[str, float]
    errors: dict[str, int]
    ranker_runs: dict[str, int]
    dropped_unknown: int
    most_selected: list[MostSelected]
    never_selected: dict[str, list[str]]
    answered_runs: int
    window_s: float
    rankers: dict[str, RankerStats]


class SaveResult(TypedDict):
    path: str
    filename: str
    created: bool
    kept: Kept | None
    migrated_from: str | None
    schema_version: str
    bytes: int
    dir: str
    notes: NotRequired[list[str]]
    index_pending: NotRequired[bool]
    """The file is on disk, but the index could not take it yet (full disk, held lock)."""


class Kept(TypedDict):
    steps_completed: list[str]
    key_decisions: int
    checkpoints_approved: list[str]
    session_summary: bool
    active_state: bool


class SkippedSession(TypedDict):
    filename: str
    reason: str


class LoadLastReply(TypedDict):
    found: bool
    skipped: list[SkippedSession]
    path: NotRequired[str]
    filename: NotRequired[str]
    content: NotRequired[str]
    fields: NotRequired[dict[str, Any]]
    schema_version: NotRequired[str]
    time_since_last_session_hours: NotRequired[float | None]
    resume_line: NotRequired[str]
    message: NotRequired[str]
    warning: NotRequired[str]
    truncated: NotRequired[bool]
    notes: NotRequired[list[str]]


class SourceJson(TypedDict):
    filename: str
    lines: list[int]
    """First and last line."""
    date: str


class ConflictJson(SourceJson):
    text: str | None


class FindingJson(TypedDict):
    type: str
    text: str
    evidence: str
    quoted: bool
    source: SourceJson
    conflicts_with: NotRequired[ConflictJson]


class UnreadSession(TypedDict):
    filename: str
    error: str


class ContextReply(TypedDict):
    text: str
    status: str
    scope: str
    findings: list[FindingJson]
    sessions_read: list[str]
    budget_tokens: int
    sessions_searched: NotRequired[int]
    rounds: NotRequired[int]
    skipped: NotRequired[list[UnreadSession]]
    dropped_for_budget: NotRequired[int]
    tokens: NotRequired[int]
    projects: NotRequired[list[str]]
    notes: NotRequired[list[str]]


class ReportResult(TypedDict):
    at: str
    path: str
    json: str
    roots: list[str]
    summary: dict[str, int]
    seconds: NotRequired[float]
