"""Typed requests and results of ``save``, ``load_last``, ``context``, ``report``, ``check``.

A request is parsed once where it enters memoryd (a socket handler, the
CLI's in-process fallback) and the service below never reads a wire dict.
Every mistake is an ``invalid_params`` error naming the field. Directories
stay as given: the index a service runs over resolves them (the daemon also
keeps them watched).

Only the standard library and the param checks are imported here, so the
client path can build these requests without loading SQLite, YAML or
structlog. The session requests' projects and fields are checked by the
session format, which needs YAML, so their parsers live with the session
I/O in :mod:`memoryd.sessions.files`; ``report`` and ``check`` parse here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from memoryd import requests as p
from memoryd.durations import parse_duration
from memoryd.errors import InvalidParams
from memoryd.methods import METHODS, REPORT
from memoryd.replies import CheckResult, ContextReply, ListReply, LoadLastReply, SaveResult

if TYPE_CHECKING:
    from memoryd.sessions.format import SessionInput

DEFAULT_BUDGET = 600
R = TypeVar("R")


class Request(Generic[R]):
    """A request a client can send as it is: its method, its wire params, its reply type ``R``."""

    METHOD: ClassVar[str]

    def params(self) -> Mapping[str, object]:
        raise NotImplementedError


@dataclass(frozen=True)
class SaveRequest:
    """A checked ``save``: the real directory, the session fields, the project as given."""

    dir: str
    raw_dir: str
    session: SessionInput
    project_given: object = None
    replace: bool = False


@dataclass(frozen=True)
class SaveParams(Request[SaveResult]):
    """A ``save`` as a client sends it: the wire's fields, checked by the daemon.

    The checked form is :class:`SaveRequest`, whose session fields come from
    the session format's parser (which needs YAML, so the client cannot
    build it). Fields left None are not sent.
    """

    METHOD = "save"
    dir: str
    project: str
    session_summary: str | None = None
    active_state: str | None = None
    session: str | None = None
    status: str | None = None
    mode: str | None = None
    last_checkpoint: str | None = None
    target_dir: str | None = None
    steps_completed: dict[str, str] | None = None
    key_decisions: list[str] | None = None
    checkpoints_approved: list[str] | None = None
    checkpoint_decisions: dict[str, dict[str, Any]] | None = None
    replace: bool | None = None

    def params(self) -> Mapping[str, object]:
        sent = ((f.name, getattr(self, f.name)) for f in fields(self))
        return {name: value for name, value in sent if value is not None}


@dataclass(frozen=True)
class LoadLastRequest(Request[LoadLastReply]):
    """A checked ``load_last`` request; ``project`` is the slug (lowercased)."""

    METHOD = "load_last"
    dir: str
    project: str
    project_given: object = None
    reveal_secrets: bool = False

    def params(self) -> Mapping[str, object]:
        return {"dir": self.dir, "project": self.project, "reveal_secrets": self.reveal_secrets}


@dataclass(frozen=True)
class ContextRequest(Request[ContextReply]):
    """A checked ``context`` request: the task, one or more directories, scope and budget."""

    METHOD = "context"
    task: str
    dirs: tuple[str, ...]
    project: str | None = None
    budget_tokens: int = DEFAULT_BUDGET
    project_given: object = None

    def params(self) -> Mapping[str, object]:
        return {
            "task": self.task,
            "dir": list(self.dirs),
            "project": self.project,
            "budget_tokens": self.budget_tokens,
        }


@dataclass(frozen=True)
class ReportRequest:
    """A checked ``report`` request; None means every root / the configured age."""

    dir: str | None = None
    older_than_s: float | None = None


@dataclass(frozen=True)
class ListRequest(Request[ListReply]):
    """A checked ``list`` request: the files in or below one folder."""

    METHOD = "list"
    dir: str

    def params(self) -> Mapping[str, object]:
        return {"dir": self.dir}


@dataclass(frozen=True)
class CheckRequest(Request[CheckResult]):
    """A checked ``check`` request: the folder whose citing memories to re-check."""

    METHOD = "check"
    dir: str

    def params(self) -> Mapping[str, object]:
        return {"dir": self.dir}


Folder = TypeVar("Folder", ListRequest, CheckRequest)


def directory_param(params: Mapping[str, Any]) -> str:
    """The ``dir`` param as given, once it is at least a non-empty string."""
    raw = params.get("dir")
    if not isinstance(raw, str) or not raw:
        raise InvalidParams("'dir' must be a directory path", {"field": "dir"})
    return raw


def parse_report(params: Mapping[str, Any]) -> ReportRequest:
    p.reject_unknown(params, REPORT.accepts())
    raw = params.get("dir")
    older = params.get("older_than")
    return ReportRequest(
        dir=None if raw is None else p.directory(raw),
        older_than_s=None if older is None else parse_duration(older, "older_than"),
    )


def parse_folder(params: Mapping[str, Any], kind: type[Folder]) -> Folder:
    """``list``'s or ``check``'s params: only ``dir``, as given."""
    p.reject_unknown(params, METHODS[kind.METHOD].accepts())
    return kind(directory_param(params))
