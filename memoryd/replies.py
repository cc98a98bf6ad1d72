"""The reply of every socket method, as a type: what ``result`` holds (docs/protocol.md).

The daemon builds them and the Python client returns them. Only :mod:`typing`
and the sibling type modules are imported, so the client path can name them for
free. Nested entries are typed too; a few stay ``dict[str, Any]`` (a session
file's front matter), whose keys come from the file, not from memoryd.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

from memoryd.check_replies import CheckoutFound, Verdict
from memoryd.file_entries import FileError, SyncCounts


class RootStatus(TypedDict):
    """A watched folder: where it came from, how it is watched, what it holds."""

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
    """A stat scan (of every root, or one root's recrawl): when, why, how long, files fixed."""

    at: str
    reason: str
    seconds: float
    drift: int


class LastReload(TypedDict):
    """The last SIGHUP: whether its config was applied, and why not when it was refused."""

    at: str
    applied: bool
    reason: str | None


class IndexingProgress(TypedDict):
    """The first index's progress (``phase`` done once it finished)."""

    phase: Literal["indexing", "done"]
    done: int
    total: int
    seconds: float
    rate_per_s: int | None


class IndexHealth(TypedDict):
    """Whether the index can be written, and what waits for it when it cannot."""

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
    """The last report the daemon wrote, and what started it."""

    at: str
    path: str
    json: str
    trigger: str
    seconds: float


class ReconcileFailure(TypedDict):
    """The last full stat scan that failed: when, why it ran, and the error."""

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
    """A memory's bytes and body lines (``oversized`` in ``list``)."""

    bytes: int
    lines: int


class FileSummary(TypedDict):
    """A file as ``list`` shows it; the report and staleness add their marks."""

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
    """Every indexed file in or below ``dir``, and the files that did not parse."""

    dir: str
    files: list[FileSummary]
    errors: list[FileError]


class ReindexReply(SyncCounts):
    """What a full stat scan changed, and the parse errors now under the scanned folders."""

    dirs: list[str]


class Watched(TypedDict):
    """The root that now covers ``dir`` (``added`` false when one already did)."""

    dir: str
    root: str | None
    added: bool
    origin: str | None


class WatchReply(Watched):
    """The root that now covers ``dir``, and how the watcher follows it."""

    watcher: str


class UnwatchReply(TypedDict):
    """The root dropped, and whether the config or command line brings it back."""

    dir: str
    removed: bool
    origin: str
    files_forgotten: int
    returns_at_restart: bool


class ShutdownReply(TypedDict):
    stopping: bool
    pid: int


class SelectedMemory(TypedDict):
    """One returned memory: where it is, what it says, how old, why it ranked, how fresh."""

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
    """How many memories each selection rule kept out of the candidates."""

    surfaced: int
    index: int
    tool_docs: int
    tool_doc_files: list[str]
    secrets: int
    duplicates_of_surfaced: int
    superseded: int
    vanished: int


class SelectResult(TypedDict):
    """The reply of ``select`` (``latency_ms`` is set once the run is timed)."""

    run_id: str
    ranker: str
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
    """One ranker's runs: a judge's (asked, its answer used or not), or ``local`` alone."""

    runs: int
    shortlist_mean: float | None
    judge_ms: dict[str, float | None]
    tokens_in: int
    tokens_out: int
    fallbacks: dict[str, int]


class StatsReply(TypedDict):
    """Selector telemetry over the window ``since`` names."""

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
    """Where a session memory was written and how; ``notes`` when the project was lowercased."""

    path: str
    filename: str
    created: bool
    kept: Kept | None
    migrated_from: str | None
    schema_version: str
    bytes: int
    dir: NotRequired[str]
    notes: NotRequired[list[str]]
    index_pending: NotRequired[bool]
    """The file is on disk, but the index could not take it yet (full disk, held lock)."""


class Kept(TypedDict):
    """What a second save of a session kept from the first (``kept`` of ``save``)."""

    steps_completed: list[str]
    key_decisions: int
    checkpoints_approved: list[str]
    session_summary: bool
    active_state: bool


class SkippedSession(TypedDict):
    """A session file that could not be read or parsed, and why."""

    filename: str
    reason: str


class LoadLastReply(TypedDict):
    """The newest session memory of a project (``found`` false: none, ``message`` says so)."""

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
    """Where a finding of a brief comes from: the session file, its lines, its date."""

    filename: str
    lines: list[int]
    """First and last line."""
    date: str


class ConflictJson(SourceJson):
    """An earlier session that said otherwise, and what it said."""

    text: str | None


class FindingJson(TypedDict):
    """One finding of a brief, with its evidence and source."""

    type: str
    text: str
    evidence: str
    quoted: bool
    source: SourceJson
    conflicts_with: NotRequired[ConflictJson]


class UnreadSession(TypedDict):
    """A session file a brief could not read (``skipped`` of ``context``), and why."""

    filename: str
    error: str


class ContextReply(TypedDict):
    """The cited brief of earlier sessions for a task."""

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
    """Where a report was written, what it covered, its counts (``seconds`` once timed)."""

    at: str
    path: str
    json: str
    roots: list[str]
    summary: dict[str, int]
    seconds: NotRequired[float]
