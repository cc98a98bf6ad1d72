"""The reply of every socket method, as a type: what ``result`` holds (docs/protocol.md).

These are the shapes the daemon and the CLI's in-process fallback build and
the Python client returns. Only :mod:`typing` is imported, so the client path
(the hook, every CLI command) can name them for free, and
:mod:`memoryd.methods` can say which one each method answers with.

Nested entries are typed too (a root, a verdict, a finding of a brief), so
a client reads them by name. A few stay ``dict[str, Any]`` (a file in a
listing, the status entries features add): their keys are each feature's own
and are documented with the method.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict


class RootStatus(TypedDict):
    """A watched folder: where it came from, how it is watched, what it holds."""

    path: str
    origin: str
    forget_after: str | None
    watcher: str
    files: int
    errors: int
    watcher_note: NotRequired[str]
    checkout: NotRequired[CheckoutFound | None]


class StatusReply(TypedDict):
    """What the daemon is doing; features add their entries (``report_schedule``, …)."""

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
    last_reconcile: dict[str, Any] | None
    drift_fixed_total: int
    indexing: dict[str, Any] | None
    writer_queue: int
    index: dict[str, Any]
    connections: int
    connections_refused: int
    report_schedule: NotRequired[dict[str, Any]]
    last_report: NotRequired[dict[str, Any]]


class ListReply(TypedDict):
    """Every indexed file in or below ``dir``, and the files that did not parse."""

    dir: str
    files: list[dict[str, Any]]
    errors: list[dict[str, Any]]


class ReindexReply(TypedDict):
    """What a full stat scan changed, and the parse errors now under the scanned folders."""

    added: int
    updated: int
    removed: int
    unchanged: int
    errors: list[dict[str, Any]]
    seconds: float
    dirs: list[str]


class WatchReply(TypedDict):
    """The root that now covers ``dir`` (``added`` false when one already did)."""

    dir: str
    root: str | None
    added: bool
    origin: str | None
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


class ChangedPath(TypedDict):
    """A cited path that commits changed after the memory was last written."""

    path: str
    commits: int
    newest: str


class Verdict(TypedDict):
    """Whether what a memory cites is still there in its checkout (``staleness``)."""

    checkout: str
    checkout_guessed: bool
    head: str | None
    cited: int
    missing: list[str]
    renamed: dict[str, str]
    changed_since: list[ChangedPath]
    all_gone: bool
    stale: bool


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
    latency_ms: float


class MostSelected(TypedDict):
    dir: str
    filename: str
    count: int


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


class SaveResult(TypedDict):
    """Where a session memory was written and how; ``notes`` when the project was lowercased."""

    path: str
    filename: str
    created: bool
    kept: dict[str, Any] | None
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


class LoadLastReply(TypedDict):
    """The newest session memory of a project (``found`` false: none, ``message`` says so)."""

    found: bool
    skipped: list[dict[str, Any]]
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
    skipped: NotRequired[list[dict[str, Any]]]
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


class CheckoutFound(TypedDict):
    """The checkout a memory folder's citations are checked against, or why there is none."""

    path: str | None
    source: str | None
    reason: str | None


class CheckedFolder(TypedDict):
    """A folder ``check`` covered: its checkout and how it was read (None: not checked)."""

    dir: str
    checkout: CheckoutFound
    mode: str | None


class CheckedMemory(TypedDict):
    """A citing memory, the paths it cites, and its verdict (None: no checkout)."""

    filename: str
    path: str
    citations: list[str]
    staleness: Verdict | None


class CheckResult(TypedDict):
    """Each citing memory's verdict under a folder, and how many are stale."""

    dir: str
    folders: list[CheckedFolder]
    memories: list[CheckedMemory]
    citing: int
    stale: int
