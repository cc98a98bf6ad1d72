"""Every socket method, declared once: a frozen dataclass of its params, and its reply type.

A declaration's fields are the method's params: a field's type is its wire
type, its default the wire default (no default: required), and its
:func:`param` metadata the help text, bounds, choices and whether only the
daemon reads it. :func:`decode` is the one parser of a request's params: an
unknown param, a wrong type or a value out of bounds is ``invalid_params``
naming the field. Handlers take the declaration (``cmd_select(self, req:
Select) -> SelectResult``), found by name (:func:`handler`). The CLI's flags,
the MCP tools' input schemas and docs/protocol.md's parameter tables are made
from :func:`params`. Checks that need the disk or a domain's rules (a
directory's existence, a project slug, a session's labels) stay with the
handler that needs them.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, NamedTuple, TypeVar

from memoryd import replies
from memoryd.durations import parse_duration
from memoryd.errors import InvalidParams

WIRE_CAPABILITIES = ("peer-uid-check",)
"""Capabilities of the socket itself, not of one method."""

Dir = Annotated[str, "dir"]
"""A directory path: a non-empty string (the handler resolves it)."""
Dirs = Annotated[tuple[str, ...], "dirs"]
"""A directory or a list of them."""
Duration = Annotated[str | float, "duration"]
"""``7d``, ``12h``, ``45m`` or a number of seconds (the handler converts it)."""

RANKERS = ("auto", "local", "anthropic", "openai")
MODES = ("architect", "express")
STATUSES = ("in-progress", "paused", "completed")
MEMORY_DIR = "the memory directory"
PROJECT_HELP = "the project's slug: lowercase letters, digits, '.', '_', '-'"


def param(
    help: str,
    default: Any = dataclasses.MISSING,
    *,
    lo: int | None = None,
    hi: int | None = None,
    max_len: int | None = None,
    choices: tuple[str, ...] = (),
    daemon_only: bool = False,
    doc: str = "",
) -> Any:
    """A field that is a param: ``help`` (the CLI's and MCP's words), ``doc`` (the protocol
    page's, when it says more), bounds of an integer (``lo``..``hi``) or a string's length."""
    meta = {
        "help": help,
        "lo": lo,
        "hi": hi,
        "max_len": max_len,
        "choices": choices,
        "daemon_only": daemon_only,
        "doc": doc,
    }
    return field(default=default, metadata=meta)


class Param(NamedTuple):
    """One param as the edges see it: a field of a declaration with its type's wire kind."""

    name: str
    kind: str
    """string, strings, integer, boolean, mapping, dir, dirs or duration."""
    required: bool
    default: Any
    help: str
    doc: str
    lo: int | None
    hi: int | None
    max_len: int | None
    choices: tuple[str, ...]
    daemon_only: bool


_KINDS = {str: "string", int: "integer", bool: "boolean", tuple: "strings", Mapping: "mapping"}


def _kind(hint: Any) -> str:
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in args:
        (hint,) = (a for a in args if a is not type(None))
        args = typing.get_args(hint)
    if typing.get_origin(hint) is Annotated:
        return str(args[1])
    return _KINDS[typing.get_origin(hint) or hint]


@functools.cache
def params(decl: type) -> tuple[Param, ...]:
    """``decl``'s params in declaration order."""
    hints = typing.get_type_hints(decl, include_extras=True)
    found = []
    for f in dataclasses.fields(decl):
        m = f.metadata
        required = f.default is dataclasses.MISSING
        default = None if required else f.default
        found.append(
            Param(
                f.name,
                _kind(hints[f.name]),
                required,
                default,
                m["help"],
                m["doc"] or m["help"],
                m["lo"],
                m["hi"],
                m["max_len"],
                m["choices"],
                m["daemon_only"],
            )
        )
    return tuple(found)


def _invalid(name: str, problem: str) -> InvalidParams:
    return InvalidParams(f"'{name}' {problem}", {"field": name})


def _value(p: Param, value: Any) -> Any:
    """``value`` of param ``p``, checked (lists become tuples); None means not given."""
    if p.kind == "dir":
        if value is None and not p.required:
            return None
        if not isinstance(value, str) or not value:
            raise _invalid(p.name, "must be a directory path")
        return value
    if p.kind == "dirs":
        many = value if isinstance(value, list) else [value]
        if not many or not all(isinstance(d, str) and d for d in many):
            raise _invalid(p.name, "must be a directory path or a list of them")
        return tuple(many)
    if value is None:
        if p.required:
            raise _invalid(p.name, "is required")
        return p.default
    if p.choices and value not in p.choices:
        raise _invalid(p.name, f"must be one of: {', '.join(p.choices)}")
    if p.kind == "string":
        if not isinstance(value, str):
            raise _invalid(p.name, "must be a string")
        if p.required and not value.strip():
            raise _invalid(p.name, "must not be empty")
        if p.max_len is not None and len(value) > p.max_len:
            raise _invalid(p.name, f"is {len(value):,} characters; the limit is {p.max_len:,}")
    elif p.kind == "integer":
        if isinstance(value, bool) or not isinstance(value, int) or not p.lo <= value <= p.hi:  # type: ignore[operator]
            raise _invalid(p.name, f"must be an integer from {p.lo} to {p.hi}")
    elif p.kind == "boolean" and not isinstance(value, bool):
        raise _invalid(p.name, "must be true or false")
    elif p.kind == "strings":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise _invalid(p.name, "must be a list of strings")
        return tuple(value)
    elif p.kind == "mapping" and not isinstance(value, dict):
        raise _invalid(p.name, "must be a mapping")
    elif p.kind == "duration":
        parse_duration(value, p.name)
    return value


D = TypeVar("D")


def decode(decl: type[D], given: Mapping[str, Any]) -> D:
    """The request ``given`` makes, or ``invalid_params``: unknown params first, then the
    first bad field in declaration order."""
    known = params(decl)  # type: ignore[arg-type]
    extra = sorted(set(given) - {p.name for p in known})
    if extra:
        raise InvalidParams(f"unknown parameter(s): {', '.join(extra)}", {"fields": extra})
    return decl(**{p.name: _value(p, given.get(p.name)) for p in known})


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


def method(
    name: str, reply: type, *capabilities: str, before_ready: bool = False
) -> Callable[[T], T]:
    """Register the decorated declaration as method ``name``."""

    def register(cls: T) -> T:
        METHODS[name] = Method(name, cls, reply, (name, *capabilities), before_ready)
        return cls

    return register


@method("status", replies.StatusReply, "request-root-expiry", before_ready=True)
@dataclass(frozen=True)
class Status:
    pass


@method("list", replies.ListReply)
@dataclass(frozen=True)
class List:
    dir: Dir = param(MEMORY_DIR)


@method("reindex", replies.ReindexReply)
@dataclass(frozen=True)
class Reindex:
    dir: Dir | None = param("the folder to scan (default: every root)", None)


@method("watch", replies.WatchReply)
@dataclass(frozen=True)
class Watch:
    dir: Dir = param("the folder to watch")


@method("unwatch", replies.UnwatchReply)
@dataclass(frozen=True)
class Unwatch:
    dir: Dir = param("the root to drop")


@method("shutdown", replies.ShutdownReply, before_ready=True)
@dataclass(frozen=True)
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
@dataclass(frozen=True)
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
@dataclass(frozen=True)
class Stats:
    since: Duration = param("the window, such as 7d or 24h", "7d")


@method("save", replies.SaveResult, "session-schema-1.1", "project-case-notes")
@dataclass(frozen=True)
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
@dataclass(frozen=True)
class LoadLast:
    dir: Dir = param(MEMORY_DIR)
    project: str = param(PROJECT_HELP)
    reveal_secrets: bool = param("return credentials in the file unredacted", False)


@method("context", replies.ContextReply)
@dataclass(frozen=True)
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
@dataclass(frozen=True)
class Report:
    dir: Dir | None = param("the folder to report on (default: every root)", None)
    older_than: Duration | None = param(
        "the age from which sessions count as old",
        None,
        doc="the age from which sessions count as old (default: the config's "
        "`reports.older_than_days`, 30)",
    )


@method("check", replies.CheckResult)
@dataclass(frozen=True)
class Check:
    dir: Dir = param(MEMORY_DIR)


def described(decl: type, name: str) -> dict[str, Any]:
    """``add_argument`` keywords for param ``name`` of ``decl``: its help, default, type and
    choices (a command's flag names, and which params it offers, are the command's own)."""
    p = next(p for p in params(decl) if p.name == name)
    found: dict[str, Any] = {"help": p.help}
    if p.default not in (None, (), False):
        found.update(help=f"{p.help} (default: {p.default})", default=p.default)
    if p.kind == "integer":
        found["type"] = int
    if p.choices:
        found["choices"] = p.choices
    return found


def wire_params(args: object, decl: type, **given: object) -> dict[str, object]:
    """``decl``'s params as a command line's ``args`` gave them (a flag's ``dest`` is the wire
    name; unset flags are None and not sent), then ``given`` (resolved values)."""
    flags = {p.name: getattr(args, p.name, None) for p in params(decl)}
    return {**{k: v for k, v in flags.items() if v is not None}, **given}


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
