"""Plain records passed between the scanner, the parser, the syncer and the store, and the
``files`` row each file becomes (a tuple in :data:`~memoryd.indexer.queries.FILES_TABLE` order)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, NamedTuple

from memoryd._unicode_words import unspaced_grams
from memoryd.indexer.queries import FILES_TABLE
from memoryd.indexer.secrets import redact, redact_value

MEMORY_TYPES = ("user", "feedback", "project", "reference")
KIND_MEMORY = "memory"
KIND_INDEX = "index"
KIND_SESSION = "session"
INDEX_FILENAME = "MEMORY.md"

# error_kind values: "read" errors are retried on every scan (a chmod does not
# change mtime), "parse" errors only when the file's stat changes.
ERROR_READ = "read"
ERROR_PARSE = "parse"


@dataclass(frozen=True, slots=True)
class FileStat:
    """What ``stat`` says about a file: the cheap part of change detection."""

    path: str
    directory: str
    filename: str
    mtime_ns: int
    size: int
    inode: int
    stat_error: str | None = None
    """Set when the file could not even be stat'ed (broken symlink, loop)."""

    @property
    def signature(self) -> tuple[int, int, int]:
        return (self.mtime_ns, self.size, self.inode)


@dataclass(slots=True)
class ParsedFile:
    """What the parser made of a file's bytes."""

    kind: str
    content_hash: str
    name: str | None = None
    description: str | None = None
    type: str | None = None
    body: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    """A session's fields, JSON-ready; a memory's header facts under ``header``."""
    error: str | None = None
    error_kind: str | None = None
    warning: str | None = None
    """A problem that does not make the file unusable (e.g. read only in part)."""
    secrets: list[dict[str, Any]] = field(default_factory=list)
    """Lines that look like credentials: ``[{"line": n, "kind": "..."}]``."""


class StoredStat(NamedTuple):
    """The change-detection columns of one indexed row (:data:`STAT_COLUMNS`, in order)."""

    mtime_ns: int
    size: int
    inode: int
    content_hash: str | None
    error_kind: str | None
    error: str | None

    @property
    def signature(self) -> tuple[int, int, int]:
        return (self.mtime_ns, self.size, self.inode)


STAT_COLUMNS = ", ".join(StoredStat._fields)


@dataclass(frozen=True, slots=True)
class Upsert:
    stat: FileStat
    parsed: ParsedFile


@dataclass(frozen=True, slots=True)
class Touch:
    """Same content, new stat (e.g. ``touch`` or a rewrite with equal bytes)."""

    stat: FileStat


@dataclass(frozen=True, slots=True)
class Delete:
    path: str


Change = Upsert | Touch | Delete


def unexpected(doing: str, exc: Exception) -> str:
    """A file's error for an exception nothing foresaw, on one line, bounded and redacted."""
    why = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
    return f"{doing} ({redact(why)})"


Row = tuple[object, ...]
"""One ``files`` row, a value per column of ``FILES_TABLE``, in that order."""

INSERT_SQL = (
    f"INSERT INTO files ({', '.join(FILES_TABLE)}) VALUES ({', '.join('?' for _ in FILES_TABLE)})"
)
"""Writes a :data:`Row` of a path not indexed yet (fails on one that is)."""

UPSERT_SQL = f"{INSERT_SQL} ON CONFLICT(path) DO UPDATE SET " + ", ".join(
    f"{c} = excluded.{c}" for c in FILES_TABLE if c != "path"
)
"""Writes a :data:`Row`; a path already indexed gets the new values."""

CITED = itemgetter(*(FILES_TABLE.index(c) for c in ("path", "kind", "description", "body")))
"""A row's ``(path, kind, description, body)``: what its citations are taken from."""

_IN_TABLE_ORDER = itemgetter(*FILES_TABLE)


def file_row(stat: FileStat, parsed: ParsedFile, now: float) -> Row:
    """The row of one file; a file whose row cannot be worked out gets a row with that error."""
    try:
        return _file_row(stat, parsed, now)
    except Exception as exc:
        why = unexpected("could not index the file", exc)
        failed = ParsedFile(parsed.kind, parsed.content_hash, error=why, error_kind=ERROR_PARSE)
        return _file_row(stat, failed, now)


def _file_row(stat: FileStat, parsed: ParsedFile, now: float) -> Row:
    if parsed.secrets:  # the raw value stays in the memory file and nowhere else
        parsed = dataclasses.replace(
            parsed,
            name=redact_value(parsed.name),
            description=redact_value(parsed.description),
            body=redact_value(parsed.body),
            meta=redact_value(parsed.meta),
        )
    meta = parsed.meta
    # load_last matches on the filename, so the project comes from there too.
    is_session = parsed.kind == KIND_SESSION
    values = {
        "path": stat.path,
        "directory": stat.directory,
        "filename": stat.filename,
        "kind": parsed.kind,
        "name": parsed.name,
        "description": parsed.description,
        "type": parsed.type,
        "body": parsed.body,
        "project": stat.filename[17:-3] if is_session else None,
        "session": stat.filename[:16] if is_session else None,
        "status": meta.get("status") if meta else None,
        "meta_json": json.dumps(meta, sort_keys=True) if meta else None,
        "mtime_ns": stat.mtime_ns,
        "size": stat.size,
        "inode": stat.inode,
        "content_hash": parsed.content_hash,
        "error": parsed.error or stat.stat_error,
        "error_kind": parsed.error_kind,
        "warning": parsed.warning,
        "indexed_at": now,
        "secrets_json": json.dumps(parsed.secrets) if parsed.secrets else None,
        "grams": (
            unspaced_grams(stat.filename, parsed.name or "", parsed.description or "", parsed.body)
            if parsed.kind == KIND_MEMORY and parsed.error is None
            else None
        ),
    }
    row: Row = _IN_TABLE_ORDER(values)
    return row
