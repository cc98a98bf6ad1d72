"""What one parsed file becomes in the ``files`` table, and the statement that writes it.

Both write paths build rows here: the writer's batches
(:meth:`memoryd.indexer.store.IndexStore.apply`) and the first index of a
tree (:meth:`memoryd.indexer.store.IndexStore.load_fresh`). A row is a tuple in
:data:`~memoryd.indexer.queries.FILES_TABLE` order, taken by column name
from a dict, so neither side depends on the order the columns are listed in.
"""

from __future__ import annotations

import dataclasses
import json
from operator import itemgetter

from memoryd._unicode_words import unspaced_grams
from memoryd.indexer.queries import FILES_TABLE
from memoryd.indexer.records import KIND_MEMORY, FileStat, ParsedFile
from memoryd.indexer.secrets import redact_value

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

DIRECTORY = FILES_TABLE.index("directory")
"""Where a row holds its file's directory."""

_IN_TABLE_ORDER = itemgetter(*FILES_TABLE)


def redacted(parsed: ParsedFile) -> ParsedFile:
    """What the index keeps of a parse: credentials replaced by their kind.

    The raw value stays in the memory file and nowhere else: not in the row,
    its full-text postings, or the citations taken from its text.
    """
    if not parsed.secrets:
        return parsed
    return dataclasses.replace(
        parsed,
        name=redact_value(parsed.name),
        description=redact_value(parsed.description),
        body=redact_value(parsed.body),
        meta=redact_value(parsed.meta),
    )


def file_row(stat: FileStat, parsed: ParsedFile, now: float) -> Row:
    """The row of one file."""
    parsed = redacted(parsed)
    meta = parsed.meta
    # load_last matches on the filename, so the project comes from there too.
    is_session = parsed.kind == "session"
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
