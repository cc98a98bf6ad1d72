"""Every socket method, declared once: a frozen dataclass of its params, and its reply type.

Handlers take the declaration (``cmd_select(self, req: Select) -> SelectResult``) and are
found by name (:func:`handler`). The CLI's flags, the MCP tools' input schemas and
docs/protocol.md's parameter tables are made from the same fields.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar, dataclass_transform

from memoryd import check_replies, replies
from memoryd.errors import InvalidParams
from memoryd.params import Dir, Dirs, Duration, Param, decode, param, params

WIRE_CAPABILITIES = ("peer-uid-check",)
"""Capabilities of the socket itself, not of one method."""

RANKERS = ("auto", "local", "anthropic", "openai")
MODES = ("architect", "express")
STATUSES = ("in-progress", "paused", "completed")
MEMORY_DIR = "the memory directory"
PROJECT_HELP = "the project's slug: lowercase letters, digits, '.', '_', '-'"


class Method(NamedTuple):
    """A socket method: its declaration, what it answers, and when it can be answered."""

    name: str
    decl: type
    reply: type
    capabilities: tuple[str, ...]
    """What ``status`` announces for it: its name, then the features it brings."""
    before_ready: bool
    """Answered during the first index; every other method waits for it to finish."""

    @property
    def params(self) -> tuple[Param, ...]:
        return params(self.decl)


METHODS: dict[str, Method] = {}
"""Every method the daemon answers, by name, in docs/protocol.md's order."""

T = TypeVar("T", bound=type)


@dataclass_transform(frozen_default=True)
def method(
    name: str, reply: type, *capabilities: str, before_ready: bool = False
) -> Callable[[T], T]:
    """Make the decorated class a frozen dataclass, and register it as method ``name``."""

    def register(cls: T) -> T:
        dataclass(frozen=True)(cls)  # in place: the class itself is returned
        METHODS[name] = Method(name, cls, reply, (name, *capabilities), before_ready)
        return cls

    return register


@method("status", replies.StatusReply, "request-root-expiry", before_ready=True)
class Status:
    pass


@method("list", replies.ListReply)
class List:
    dir: Dir = param(MEMORY_DIR)


@method("reindex", replies.ReindexReply)
class Reindex:
    dir: Dir | None = param("the folder to scan (default: every root)", None)


@method("watch", replies.WatchReply)
class Watch:
    dir: Dir = param("the folder to watch")


@method("unwatch", replies.UnwatchReply)
class Unwatch:
    dir: Dir = param("the root to drop")


@method("shutdown", replies.ShutdownReply, before_ready=True)
class Shutdown:
    pass


@method(
    "select",
    replies.SelectResult,
    "select-ranker-local",
    "select-ranker-anthropic",
    "select-ranker-openai",
    "selector-telemetry",
    "select-staleness",
)
class Select:
    query: str = param("the task or question, in natural language", max_len=20_000)
    dir: Dir = param(MEMORY_DIR)
    session_id: str | None = param(
        "a label for the log and the run's telemetry row",
        None,
        max_len=200,
        doc="a label for the log and the run's `selector_runs` row (`memoryd why` reads it); "
        "the daemon keeps no record of what a session was shown (only the client knows what "
        "it delivered: pass `surfaced`)",
    )
    surfaced: tuple[str, ...] = param(
        "memories already shown this session (names or paths)",
        (),
        doc="already shown this session; never returned, and when they are the best matches "
        "the weaker ones are not offered instead (the answer may be empty). A path (as "
        "`select` returns it) must name a file of `dir`; a relative path or one elsewhere is "
        "`invalid_params`",
    )
    recent_tools: tuple[str, ...] = param(
        "tools used recently: their usage docs are skipped",
        (),
        doc="usage/API docs for these tools are never returned; their gotchas still are",
    )
    limit: int = param("the most memories to return", 5, lo=1, hi=5)
    ranker: str = param(
        "auto: the configured judge, else local",
        "auto",
        choices=RANKERS,
        doc="`auto` = the configured judge (an OpenAI-compatible server, else Claude with an "
        "API key) reading the local ranker's shortlist, else local; `anthropic` without a "
        "configured key, or `openai` without `openai.base_url`, is `invalid_params` "
        '(docs/ranker.md, "Two stages")',
    )
    allow_secrets: bool = param("let files holding credentials be selected", False)
    timeout_ms: int | None = param(
        "how long the client will wait",
        None,
        lo=1,
        hi=600_000,
        doc="how long the client will wait; the judge gets this minus 300 ms (the local "
        "ranker's share) and is not asked with less than 200 ms left; when it has not answered "
        'in time the local ranker does (`fallback: "deadline"`) and the judge\'s late answer '
        "is cached for the next ask",
    )
    cwd: str | None = param(
        "the agent's working directory",
        None,
        daemon_only=True,
        doc="the agent's working directory; remembered as the folder's checkout (see `check`)",
    )


@method("stats", replies.StatsReply)
class Stats:
    since: Duration = param("the window, such as 7d or 24h", "7d")


@method("save", replies.SaveResult, "session-schema-1.1", "project-case-notes")
class Save:
    dir: Dir = param(
        "the memory directory (must exist)",
        doc="must exist: otherwise `not_found`, `memory directory not found at {dir}`, and "
        "nothing is created",
    )
    project: str = param(
        PROJECT_HELP,
        doc="a slug `[a-z0-9][a-z0-9._-]*`, no `/`, no `..`; a name that is a slug but for its "
        "capitals (`TaskTrack`) is lowercased, and the reply of `save`, `load_last` and "
        '`context` then carries `"notes": ["project name \'TaskTrack\' lowercased to '
        "'tasktrack'\"]`",
    )
    session: str | None = param("the session's start, YYYY-MM-DD-HH-MM (default: now)", None)
    mode: str | None = param("architect or express", None, choices=MODES)
    status: str | None = param("in-progress, paused or completed", None, choices=STATUSES)
    last_checkpoint: str | None = param("the last checkpoint reached", None)
    checkpoints_approved: tuple[str, ...] = param("checkpoint labels the user approved", ())
    checkpoint_decisions: Mapping[str, Any] | None = param(
        "checkpoint -> {option, note?, regenerated_count?}: what the user chose", None
    )
    target_dir: str | None = param("the folder the work is about", None)
    session_summary: str | None = param("what this session did, in prose", None)
    steps_completed: Mapping[str, Any] | None = param("step id -> what was done", None)
    active_state: str | None = param("where things stand and what comes next", None)
    key_decisions: tuple[str, ...] = param("decisions a later session must respect", ())
    replace: bool = param(
        "overwrite an earlier save of this session",
        False,
        doc="overwrite an earlier save of this session instead of merging into it",
    )


@method("load_last", replies.LoadLastReply)
class LoadLast:
    dir: Dir = param(MEMORY_DIR)
    project: str = param(PROJECT_HELP)
    reveal_secrets: bool = param("return credentials in the file unredacted", False)


@method("context", replies.ContextReply)
class Context:
    task: str = param("the task about to be done", max_len=20_000)
    dir: Dirs = param("the memory directory, or a list of them")
    project: str | None = param(
        "only this project's sessions", None, doc="only this project's sessions (a slug)"
    )
    budget_tokens: int = param(
        "the size limit of the brief",
        600,
        lo=100,
        hi=4000,
        doc="the size limit of the brief (tokens counted as ⌈characters / 4⌉)",
    )


@method("report", replies.ReportResult, "report-schedule")
class Report:
    dir: Dir | None = param("the folder to report on (default: every root)", None)
    older_than: Duration | None = param(
        "the age from which sessions count as old, e.g. 30d (default: the config's)",
        None,
        doc="the age from which sessions count as old (default: the config's "
        "`reports.older_than_days`, 30)",
    )


@method("check", check_replies.CheckResult)
class Check:
    dir: Dir = param(MEMORY_DIR)


def capabilities() -> list[str]:
    """``status``'s ``capabilities``: every method's, and the socket's, sorted."""
    found = {c for m in METHODS.values() for c in m.capabilities}
    return sorted(found.union(WIRE_CAPABILITIES))


def handler(owner: object, name: str) -> Callable[[Mapping[str, Any]], Any] | None:
    """``owner``'s answer to method ``name`` (its ``cmd_<name>``, as dmypy finds its commands)
    taking the wire params, or None. A request refused by :func:`decode` is shown to
    ``owner.refused`` first, when it has one (``select`` records refusals)."""
    found = getattr(owner, f"cmd_{name}", None) if name in METHODS else None
    if found is None:
        return None
    decl = METHODS[name].decl
    refused = getattr(owner, "refused", None)

    def answer(given: Mapping[str, Any]) -> Any:
        try:
            req: Any = decode(decl, given)
        except InvalidParams as exc:
            if refused is not None:
                refused(name, given, exc)
            raise
        return found(req)

    return answer
