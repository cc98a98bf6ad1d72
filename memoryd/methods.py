"""Every socket method, defined once: its params, its reply type, the capabilities it brings.

The daemon's dispatch, the service's params checks, ``status``'s
``capabilities`` and the start-up gate read these definitions; the CLI's
flags, the MCP tools' input schemas, the client's helpers and
docs/protocol.md are held to them by a drift test, so a param added here
and forgotten there fails a test instead of drifting.

The CLI's daemon-backed commands import it before they send anything, so it
imports only :mod:`memoryd.replies` (typing) and is made of plain classes (no
dataclasses: they import :mod:`inspect`); the hook, which pays its imports on
every prompt, does not need it at all. Limits and messages of each check stay
with the parser that enforces them; what a param *is* lives here.
"""

from __future__ import annotations

from typing import Any, Literal

from memoryd import replies

Kind = Literal["string", "strings", "integer", "boolean", "mapping", "duration", "dirs"]
"""A param's shape on the wire: ``strings`` a list of strings, ``duration`` ``7d`` or seconds,
``dirs`` a directory or a list of them."""

WIRE_CAPABILITIES = ("peer-uid-check",)
"""Capabilities of the socket itself, not of one method."""


class Param:
    """One param of a method: its wire name, its shape, whether it must be given, what it is."""

    __slots__ = ("daemon_only", "default", "help", "kind", "name", "required")

    def __init__(
        self,
        name: str,
        kind: Kind,
        help: str,
        *,
        required: bool = False,
        default: object = None,
        daemon_only: bool = False,
    ) -> None:
        self.name = name
        self.kind = kind
        self.help = help
        self.required = required
        self.default = default
        self.daemon_only = daemon_only
        """Taken off by the daemon before the service parses the rest (``select``'s ``cwd``)."""


class Method:
    """A socket method: what it takes, what it answers, and when it can be answered."""

    __slots__ = ("before_ready", "capabilities", "name", "params", "reply")

    def __init__(
        self,
        name: str,
        params: tuple[Param, ...],
        reply: type,
        *,
        capabilities: tuple[str, ...] = (),
        before_ready: bool = False,
    ) -> None:
        self.name = name
        self.params = params
        self.reply = reply
        self.capabilities = (name, *capabilities)
        """What ``status`` announces for it: its name, then the features it brings."""
        self.before_ready = before_ready
        """Answered during the first index; every other method waits for it to finish."""

    def accepts(self) -> tuple[str, ...]:
        """The params the service's parser takes, in definition order."""
        return tuple(p.name for p in self.params if not p.daemon_only)

    def param(self, name: str) -> Param:
        return next(p for p in self.params if p.name == name)


def _dir(help: str = "the memory directory", *, required: bool = True) -> Param:
    return Param("dir", "string", help, required=required)


PROJECT_HELP = "the project's slug: lowercase letters, digits, '.', '_', '-'"

STATUS = Method(
    "status",
    (),
    replies.StatusReply,
    capabilities=("request-root-expiry",),
    before_ready=True,
)
LIST = Method(
    "list",
    (_dir(),),
    replies.ListReply,
)
REINDEX = Method(
    "reindex",
    (_dir("the folder to scan (default: every root)", required=False),),
    replies.ReindexReply,
)
WATCH = Method(
    "watch",
    (_dir("the folder to watch"),),
    replies.WatchReply,
)
UNWATCH = Method(
    "unwatch",
    (_dir("the root to drop"),),
    replies.UnwatchReply,
)
SHUTDOWN = Method("shutdown", (), replies.ShutdownReply, before_ready=True)
RANKERS = ("auto", "local", "anthropic", "openai")
"""The values ``select``'s ``ranker`` takes."""

SELECT = Method(
    "select",
    (
        Param("query", "string", "the task or question, in natural language", required=True),
        _dir(),
        Param("surfaced", "strings", "memories already shown this session (names or paths)"),
        Param("recent_tools", "strings", "tools used recently: their usage docs are skipped"),
        Param("limit", "integer", "the most memories to return", default=5),
        Param("ranker", "string", "auto: the configured judge, else local", default="auto"),
        Param("allow_secrets", "boolean", "let files holding credentials be selected"),
        Param("session_id", "string", "a label for the log and the run's telemetry row"),
        Param("timeout_ms", "integer", "how long the client will wait"),
        Param("cwd", "string", "the agent's working directory", daemon_only=True),
    ),
    replies.SelectResult,
    capabilities=(
        "select-ranker-local",
        "select-ranker-anthropic",
        "select-ranker-openai",
        "selector-telemetry",
        "select-staleness",
    ),
)
STATS = Method(
    "stats",
    (Param("since", "duration", "the window, such as 7d or 24h", default="7d"),),
    replies.StatsReply,
)
SAVE = Method(
    "save",
    (
        _dir("the memory directory (must exist)"),
        Param("project", "string", PROJECT_HELP, required=True),
        Param("session", "string", "the session's start, YYYY-MM-DD-HH-MM (default: now)"),
        Param("mode", "string", "architect or express"),
        Param("status", "string", "in-progress, paused or completed"),
        Param("last_checkpoint", "string", "the last checkpoint reached"),
        Param("checkpoints_approved", "strings", "checkpoint labels the user approved"),
        Param(
            "checkpoint_decisions",
            "mapping",
            "checkpoint -> {option, note?, regenerated_count?}: what the user chose",
        ),
        Param("target_dir", "string", "the folder the work is about"),
        Param("session_summary", "string", "what this session did, in prose"),
        Param("steps_completed", "mapping", "step id -> what was done"),
        Param("active_state", "string", "where things stand and what comes next"),
        Param("key_decisions", "strings", "decisions a later session must respect"),
        Param("replace", "boolean", "overwrite an earlier save of this session"),
    ),
    replies.SaveResult,
    capabilities=("session-schema-1.1", "project-case-notes"),
)
LOAD_LAST = Method(
    "load_last",
    (
        _dir(),
        Param("project", "string", PROJECT_HELP, required=True),
        Param("reveal_secrets", "boolean", "return credentials in the file unredacted"),
    ),
    replies.LoadLastReply,
)
CONTEXT = Method(
    "context",
    (
        Param("task", "string", "the task about to be done", required=True),
        Param("dir", "dirs", "the memory directory, or a list of them", required=True),
        Param("project", "string", "only this project's sessions"),
        Param("budget_tokens", "integer", "the size limit of the brief", default=600),
    ),
    replies.ContextReply,
)
REPORT = Method(
    "report",
    (
        _dir("the folder to report on (default: every root)", required=False),
        Param("older_than", "duration", "the age from which sessions count as old"),
    ),
    replies.ReportResult,
    capabilities=("report-schedule",),
)
CHECK = Method(
    "check",
    (_dir(),),
    replies.CheckResult,
)

METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        STATUS,
        LIST,
        REINDEX,
        WATCH,
        UNWATCH,
        SHUTDOWN,
        SELECT,
        STATS,
        SAVE,
        LOAD_LAST,
        CONTEXT,
        REPORT,
        CHECK,
    )
}
"""Every method the daemon answers, by name, in docs/protocol.md's order."""


def capabilities() -> list[str]:
    """``status``'s ``capabilities``: every method's, and the socket's, sorted."""
    found = {c for m in METHODS.values() for c in m.capabilities}
    return sorted(found.union(WIRE_CAPABILITIES))


def handler(owner: object, method: str) -> Any:
    """``owner``'s answer to ``method``: its ``cmd_<method>``, or None (dmypy's lookup)."""
    return getattr(owner, f"cmd_{method}", None) if method in METHODS else None
