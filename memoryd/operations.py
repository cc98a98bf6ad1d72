"""Typed requests and results of ``save``, ``load_last``, ``context``, ``report``, ``check``.

A request is parsed once where it enters memoryd (a socket handler) and the
service below never reads a wire dict.
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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from memoryd import requests as p
from memoryd.durations import parse_duration
from memoryd.errors import InvalidParams
from memoryd.methods import METHODS, REPORT

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
class LoadLastRequest:
    """A checked ``load_last`` request; ``project`` is the slug (lowercased)."""

    dir: str
    project: str
    project_given: object = None
    reveal_secrets: bool = False


@dataclass(frozen=True)
class ContextRequest:
    """A checked ``context`` request: the task, one or more directories, scope and budget."""

    task: str
    dirs: tuple[str, ...]
    project: str | None = None
    budget_tokens: int = DEFAULT_BUDGET
    project_given: object = None


@dataclass(frozen=True)
class ReportRequest:
    """A checked ``report`` request; None means every root / the configured age."""

    dir: str | None = None
    older_than_s: float | None = None


@dataclass(frozen=True)
class ListRequest:
    """A checked ``list`` request: the files in or below one folder."""

    METHOD = "list"
    dir: str


@dataclass(frozen=True)
class CheckRequest:
    """A checked ``check`` request: the folder whose citing memories to re-check."""

    METHOD = "check"
    dir: str


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
