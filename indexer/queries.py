"""Read-side queries over the index, for any connection (reader or writer).

Request handlers need only these and a read-only connection, never the store.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from dataclasses import dataclass, fields
from typing import Any

from memoryd.file_entries import FileError, FileWarning

_JSON_FIELDS = {"meta": "meta_json", "secrets": "secrets_json"}


@dataclass(frozen=True, slots=True)
class IndexedFile:
    """One row of the ``files`` table, as readers see it."""

    path: str
    directory: str
    filename: str
    kind: str
    name: str | None
    description: str | None
    type: str | None
    body: str
    project: str | None
    session: str | None
    status: str | None
    meta: dict[str, Any]
    mtime_ns: int
    size: int
    content_hash: str | None
    error: str | None
    warning: str | None
    secrets: list[dict[str, Any]]

    @property
    def mtime(self) -> float:
        return self.mtime_ns / 1e9


def iso_utc(epoch: float) -> str:
    """``YYYY-MM-DDTHH:MM:SSZ`` for an epoch time; a value no clock can show is ``unknown time``."""
    try:
        stamp = dt.datetime.fromtimestamp(int(epoch), dt.UTC)
    except (OverflowError, OSError, ValueError):
        return "unknown time"
    return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")


FILE_FIELDS = {f.name: _JSON_FIELDS.get(f.name, f.name) for f in fields(IndexedFile)}
"""Each field of :class:`IndexedFile` and the ``files`` column it is read from."""
FILE_COLUMNS = ", ".join(FILE_FIELDS.values())
"""The select list that :func:`row_to_file` reads."""
FILES_TABLE = (*FILE_FIELDS.values(), "inode", "error_kind", "indexed_at", "grams")
"""Every column of ``files``: those :class:`IndexedFile` is read from, and the writer's own."""


def row_to_file(row: sqlite3.Row) -> IndexedFile:
    """The file a row selected with (at least) :data:`FILE_COLUMNS` describes."""
    values = {name: row[column] for name, column in FILE_FIELDS.items()}
    values["body"] = values["body"] or ""
    values["meta"] = json.loads(values["meta"]) if values["meta"] else {}
    values["secrets"] = json.loads(values["secrets"]) if values["secrets"] else []
    return IndexedFile(**values)


def under(column: str) -> str:
    """SQL: ``column`` is a path equal to or below a directory (args: :func:`under_args`)."""
    return f"({column} = ? OR ({column} >= ? AND {column} < ?))"


def under_args(directory: str) -> tuple[str, str, str]:
    return (directory, directory + "/", directory + "0")


def files_under(conn: sqlite3.Connection, directory: str) -> list[IndexedFile]:
    """Every indexed file in or below ``directory``, by path."""
    rows = conn.execute(
        f"SELECT {FILE_COLUMNS} FROM files WHERE {under('directory')} ORDER BY path",
        under_args(directory),
    )
    return [row_to_file(r) for r in rows]


def memories_in(conn: sqlite3.Connection, directory: str) -> list[IndexedFile]:
    """The selectable manifest of one directory: parsed memory files only."""
    rows = conn.execute(
        f"SELECT {FILE_COLUMNS} FROM files WHERE directory = ? AND kind = 'memory' "
        "AND error IS NULL ORDER BY filename",
        (directory,),
    )
    return [row_to_file(r) for r in rows]


def errors_under(conn: sqlite3.Connection, directory: str) -> list[FileError]:
    """Files in or below ``directory`` indexed with an error, by path."""
    return [{"path": p, "error": e} for p, e in _noted_under(conn, directory, "error")]


def warnings_under(conn: sqlite3.Connection, directory: str) -> list[FileWarning]:
    """Files in or below ``directory`` indexed with a warning (read in part, or leniently)."""
    return [{"path": p, "warning": w} for p, w in _noted_under(conn, directory, "warning")]


def _noted_under(conn: sqlite3.Connection, directory: str, column: str) -> list[tuple[str, str]]:
    rows = conn.execute(
        f"SELECT path, {column} FROM files WHERE {column} IS NOT NULL AND {under('directory')} "
        "ORDER BY path",
        under_args(directory),
    )
    return [(r[0], r[1]) for r in rows]


def counts_under(conn: sqlite3.Connection, directory: str) -> tuple[int, int]:
    """``(files, files_with_errors)`` in or below ``directory``, each counted from an index."""
    files = conn.execute(
        f"SELECT count(*) FROM files WHERE {under('directory')}", under_args(directory)
    ).fetchone()[0]
    errors = conn.execute(
        f"SELECT count(*) FROM files WHERE error IS NOT NULL AND {under('directory')}",
        under_args(directory),
    ).fetchone()[0]
    return int(files), int(errors)


def directory_version(conn: sqlite3.Connection, directory: str) -> int:
    """Bumped by every write in ``directory``: a cheap cache key for its manifest."""
    row = conn.execute("SELECT version FROM directories WHERE path = ?", (directory,)).fetchone()
    return 0 if row is None else int(row[0])
