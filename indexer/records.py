"""Plain records passed between the scanner, the parser, the syncer and the store."""

from __future__ import annotations

import dataclasses
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from memoryd.indexer.secrets import redact

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
    # Set when the file could not even be stat'ed (broken symlink, loop).
    stat_error: str | None = None

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
    # Session fields, JSON-ready (dates as ISO strings, schema_version as str).
    meta: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    error_kind: str | None = None
    # A problem that does not make the file unusable (e.g. read only in part).
    warning: str | None = None
    # Lines that look like credentials: ``[{"line": n, "kind": "..."}]``.
    secrets: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class StoredStat:
    """The change-detection columns of one indexed row."""

    mtime_ns: int
    size: int
    inode: int
    content_hash: str | None
    error_kind: str | None
    error: str | None

    @property
    def signature(self) -> tuple[int, int, int]:
        return (self.mtime_ns, self.size, self.inode)

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> StoredStat:
        return cls(**{name: row[name] for name in _STAT_FIELDS})


_STAT_FIELDS = tuple(f.name for f in dataclasses.fields(StoredStat))
STAT_COLUMNS = ", ".join(_STAT_FIELDS)


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


_CAUSE_KEPT = 300
"""How much of an unexpected exception's text a file's error keeps."""


def unexpected(doing: str, exc: Exception) -> str:
    """A file's error for an exception nothing foresaw: what failed and why, on one line.

    Bounded and redacted: the exception's text may quote the file.
    """
    why = " ".join(f"{type(exc).__name__}: {exc}".split())[:_CAUSE_KEPT]
    return f"{doing} ({redact(why)})"
