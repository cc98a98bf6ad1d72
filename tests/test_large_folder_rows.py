"""A large folder's manifest reads its memories' rows as a stream, never all of them at once."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from conftest import MakeMemory
from test_large_folders import _large_folder

from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.select.large import LARGE_DIRECTORY
from memoryd.select.manifest import ManifestCache


class _Cursor:
    """A cursor that notes how many rows each fetch hands over at once."""

    def __init__(self, cursor: sqlite3.Cursor, fetched: list[int]) -> None:
        self._cursor, self._fetched = cursor, fetched

    def fetchall(self) -> list[Any]:
        rows = self._cursor.fetchall()
        self._fetched.append(len(rows))
        return rows

    def fetchmany(self, size: int) -> list[Any]:
        rows = self._cursor.fetchmany(size)
        self._fetched.append(len(rows))
        return rows

    def fetchone(self) -> Any:
        return self._cursor.fetchone()

    def __iter__(self) -> Iterator[Any]:
        return iter(self._cursor)


class _Connection:
    """The store's connection, its cursors wrapped in :class:`_Cursor`."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self.fetched: list[int] = []

    def execute(self, *args: Any) -> _Cursor:
        return _Cursor(self._conn.execute(*args), self.fetched)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def test_a_large_folder_never_holds_all_its_rows_at_once(
    tmp_path: Path, store: IndexStore, make_memory: MakeMemory
) -> None:
    folder = tmp_path / "big"
    total = 3 * LARGE_DIRECTORY
    _large_folder(folder, total)
    Syncer(store).sync_tree(str(folder))
    conn, cache = _Connection(store.conn), ManifestCache()
    first = cache.get(conn, str(folder))  # type: ignore[arg-type]  # a wrapped connection
    body = "This note replaces [note 3](project_note_3.md).\n"
    make_memory("project_note_new.md", "the new note", body=body, directory=folder)
    Syncer(store).sync_tree(str(folder))
    after = cache.get(conn, str(folder))  # type: ignore[arg-type]
    assert first.large and after.version != first.version and after.total == total + 1
    # Every memory's stamp is read on each new version: streamed, not fetched as one list.
    assert conn.fetched and max(conn.fetched) <= LARGE_DIRECTORY + 1, conn.fetched
    fresh = ManifestCache().get(store.conn, str(folder))
    assert after.relations is not None and fresh.relations is not None
    assert (
        after.relations.superseded
        == fresh.relations.superseded
        == {"project_note_3.md": "project_note_new.md"}
    )
