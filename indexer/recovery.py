"""Open the index, or set a damaged, deleted or replaced one aside and start over.

The index is a cache of the files: a damaged database is renamed
``<name>.corrupt-<time>`` (kept), and a fresh one gets whatever telemetry and
roots could still be read from it; the next reconcile rebuilds the rest.
:func:`trouble` tells damage from a full disk or a held lock.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from memoryd.errors import StoreError
from memoryd.indexer.store import SIDE_FILES, IndexStore, connect_ro

_CORRUPT_CODES = frozenset({11, 26})  # SQLITE_CORRUPT, SQLITE_NOTADB
_TRANSIENT_CODES = frozenset({5, 6, 10, 13})  # SQLITE_BUSY, LOCKED, IOERR, FULL
_TRANSIENT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})
_SALVAGED_TABLES = ("selector_runs", "roots")

DAMAGED = "damaged"
"""The database is damaged: move it aside and rebuild."""
UNWRITABLE = "unwritable"
"""The write failed for now (full disk, held lock, I/O error): retry it later."""


def trouble(exc: BaseException) -> tuple[str, str] | None:
    """``(DAMAGED or UNWRITABLE, reason)`` when ``exc`` (or one of its causes) comes from
    the index's storage, else None."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            break
        code = getattr(seen, "sqlite_errorcode", None)
        if isinstance(code, int):
            if code & 0xFF in _CORRUPT_CODES:
                return DAMAGED, str(seen)
            if code & 0xFF in _TRANSIENT_CODES:
                return UNWRITABLE, str(seen)
        if isinstance(seen, OSError) and seen.errno in _TRANSIENT_ERRNOS:
            return UNWRITABLE, seen.strerror or str(seen)
        seen = seen.__cause__ or seen.__context__
    return None


def replaced(store: IndexStore) -> str | None:
    """Why ``store``'s path no longer names its database (deleted, or another file), else None."""
    try:
        st = os.stat(store.path)
    except FileNotFoundError:
        return "the index file was deleted"
    except OSError:  # cannot tell (its directory made unreadable): not a reason to start over
        return None
    if (st.st_dev, st.st_ino) != store.files.get(""):
        return "the index file was replaced by another file"
    return None


def reopen(store: IndexStore, reason: str) -> tuple[IndexStore, Recovery | None]:
    """A new store at the path of ``store`` (closed), whose file was deleted or replaced
    (its own ``-wal``/``-shm`` removed first; a replacement set aside as damage is)."""
    for suffix in SIDE_FILES:
        side = f"{store.path}{suffix}"
        with contextlib.suppress(OSError):
            st = os.stat(side)
            if (st.st_dev, st.st_ino) == store.files.get(suffix):
                os.unlink(side)
    there = os.path.lexists(store.path)
    return open_or_recover(store.path, found=reason if there else None)


@dataclass(frozen=True, slots=True)
class Recovery:
    """What happened to a damaged index: why, where it went, what was kept."""

    reason: str
    moved_to: Path
    salvaged: dict[str, int]


def damage(path: Path) -> str | None:
    """Why the database at ``path`` is damaged (``PRAGMA quick_check``), or None when it is
    sound or absent; errors that are not damage are left for :class:`IndexStore`."""
    if not path.is_file():
        return None
    try:
        with contextlib.closing(connect_ro(path)) as conn:
            rows = [str(r[0]) for r in conn.execute("PRAGMA quick_check(5)")]
    except sqlite3.DatabaseError as exc:
        if getattr(exc, "sqlite_errorcode", None) in _CORRUPT_CODES:
            return str(exc)
        return None
    return None if rows == ["ok"] else "; ".join(rows)


def open_or_recover(path: Path, found: str | None = None) -> tuple[IndexStore, Recovery | None]:
    """An :class:`IndexStore` at ``path``; a damaged file (or ``found``: damage already
    seen) is set aside first."""
    reason = damage(path) or found
    if reason is None:
        return IndexStore(path), None
    moved = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}")
    try:
        path.rename(moved)
    except OSError as exc:
        raise StoreError(
            f"index at {path} is damaged ({reason}) and cannot be moved aside: {exc.strerror}"
        ) from None
    for suffix in SIDE_FILES:  # they belong to the damaged file, not to the new one
        side = Path(f"{path}{suffix}")
        with contextlib.suppress(OSError):
            side.rename(Path(f"{moved}{suffix}"))
    store = IndexStore(path)
    return store, Recovery(reason=reason, moved_to=moved, salvaged=_salvage(moved, store))


def _salvage(damaged: Path, store: IndexStore) -> dict[str, int]:
    """Copy the rows of the salvaged tables that can still be read and fit the fresh schema;
    the count kept per table."""
    kept: dict[str, int] = {}
    for table in _SALVAGED_TABLES:
        rows: list[dict[str, object]] = []
        with contextlib.suppress(sqlite3.Error), contextlib.closing(connect_ro(damaged)) as conn:
            conn.row_factory = sqlite3.Row
            for row in conn.execute(f"SELECT * FROM {table}"):
                rows.append(dict(row))
        columns = set(store.db.table(table).columns_dict)
        clean = [{k: v for k, v in row.items() if k in columns} for row in rows]
        with store.transaction():
            store.db.table(table).insert_all(clean, ignore=True)
        kept[table] = len(clean)
    return kept
