"""The SQLite index: WAL, recorded migrations, FTS kept in sync, clear open errors."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memoryd.errors import StoreError
from memoryd.indexer import queries
from memoryd.indexer.records import Delete, FileStat, ParsedFile, Touch, Upsert
from memoryd.indexer.schema import MIGRATIONS
from memoryd.indexer.store import IndexStore, open_reader


def _stat(path: str, mtime_ns: int = 1_700_000_000_000_000_000, size: int = 10) -> FileStat:
    directory, _, filename = path.rpartition("/")
    return FileStat(path, directory, filename, mtime_ns, size, 42)


def _parsed(description: str, body: str = "body words") -> ParsedFile:
    return ParsedFile(
        kind="memory",
        content_hash=f"h-{description}-{body}",
        name="n",
        description=description,
        type="feedback",
        body=body,
    )


def _fts(conn: sqlite3.Connection, query: str) -> list[str]:
    rows = conn.execute(
        "SELECT f.path FROM files_fts JOIN files f ON f.rowid = files_fts.rowid "
        "WHERE files_fts MATCH ? ORDER BY f.path",
        (query,),
    )
    return [r[0] for r in rows]


def _integrity_ok(conn: sqlite3.Connection) -> None:
    conn.execute("INSERT INTO files_fts(files_fts) VALUES ('integrity-check')")


def test_wal_and_migrations_recorded(store: IndexStore) -> None:
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    names = [r[0] for r in store.conn.execute("SELECT name FROM _migrations ORDER BY id")]
    assert names == [name for name, _ in MIGRATIONS]


def test_reopen_does_not_migrate_again(db_file: Path) -> None:
    IndexStore(db_file).close()
    st = IndexStore(db_file)
    try:
        count = st.conn.execute("SELECT count(*) FROM _migrations").fetchone()[0]
        assert count == len(MIGRATIONS)
    finally:
        st.close()


def test_index_from_a_newer_memoryd_is_refused(db_file: Path) -> None:
    st = IndexStore(db_file)
    with st.transaction() as conn:
        conn.execute("INSERT INTO _migrations(id, name, applied_at) VALUES (99, '099_future', 0)")
    st.close()
    with pytest.raises(StoreError, match="written by a newer memoryd"):
        IndexStore(db_file)


def test_an_index_from_a_build_before_the_release_is_made_afresh(db_file: Path) -> None:
    """Its upgrade steps are gone; it is a cache of the files, so it is emptied and rebuilt."""
    db_file.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db_file)
    conn.executescript(
        """CREATE TABLE _migrations (id INTEGER PRIMARY KEY, name TEXT, applied_at REAL);
        INSERT INTO _migrations VALUES (1, '001_files_fts_directories_roots', 0),
            (2, '002_secret_flags', 0), (9, '009_packed_term_stats', 0);
        CREATE TABLE files (path TEXT PRIMARY KEY, directory TEXT, body TEXT);
        INSERT INTO files VALUES ('/m/a.md', '/m', 'old');
        CREATE VIRTUAL TABLE files_fts USING FTS5 (body, content="files");
        CREATE TABLE term_stats (directory TEXT PRIMARY KEY, blob BLOB);"""
    )
    conn.close()
    st = IndexStore(db_file)
    try:
        names = [r[0] for r in st.conn.execute("SELECT name FROM _migrations ORDER BY id")]
        assert names == [name for name, _ in MIGRATIONS]
        assert st.conn.execute("SELECT count(*) FROM files").fetchone()[0] == 0
        tables = {r[0] for r in st.conn.execute("SELECT name FROM sqlite_master")}
        assert "term_stats" not in tables and "grams" in {
            r[1] for r in st.conn.execute("PRAGMA table_info(files)")
        }
        st.apply([Upsert(_stat("/m/b.md"), _parsed("deploy runbook"))])
        assert _fts(st.conn, "deploy") == ["/m/b.md"]
        _integrity_ok(st.conn)
    finally:
        st.close()


def test_fts_follows_insert_update_delete(store: IndexStore) -> None:
    a, b = "/m/a.md", "/m/b.md"
    store.apply([Upsert(_stat(a), _parsed("deploy runbook")), Upsert(_stat(b), _parsed("flaky"))])
    assert _fts(store.conn, "deploy") == [a]
    store.apply([Upsert(_stat(a, size=11), _parsed("rollback steps"))])
    assert _fts(store.conn, "deploy") == []
    assert _fts(store.conn, "rollback") == [a]
    store.apply([Delete(b)])
    assert _fts(store.conn, "flaky") == []
    _integrity_ok(store.conn)


def test_touch_updates_stat_without_rewriting_fts(store: IndexStore) -> None:
    a = "/m/a.md"
    store.apply([Upsert(_stat(a), _parsed("deploy runbook"))])
    fts_before = store.conn.execute("SELECT count(*) FROM files_fts_data").fetchone()[0]
    written = store.apply([Touch(_stat(a, mtime_ns=5))])
    # One files row plus the directory version row, and no FTS shadow-table writes.
    assert written == 2
    assert store.stat_of(a) is not None and store.stat_of(a).mtime_ns == 5  # type: ignore[union-attr]
    assert store.conn.execute("SELECT count(*) FROM files_fts_data").fetchone()[0] == fts_before
    assert _fts(store.conn, "deploy") == [a]
    _integrity_ok(store.conn)


def test_directory_version_bumps_on_each_write(store: IndexStore) -> None:
    assert queries.directory_version(store.conn, "/m") == 0
    store.apply([Upsert(_stat("/m/a.md"), _parsed("x"))])
    store.apply([Delete("/m/a.md")])
    assert queries.directory_version(store.conn, "/m") == 2
    assert store.apply([]) == 0


def test_reader_sees_commits_and_cannot_write(store: IndexStore, db_file: Path) -> None:
    store.apply([Upsert(_stat("/m/a.md"), _parsed("visible"))])
    reader = open_reader(db_file)
    try:
        assert [f.path for f in queries.files_under(reader, "/m")] == ["/m/a.md"]
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            reader.execute("DELETE FROM files")
    finally:
        reader.close()


def test_open_reader_without_index(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no index at"):
        open_reader(tmp_path / "missing.db")


def test_text_file_as_db(tmp_path: Path) -> None:
    bad = tmp_path / "index.db"
    bad.write_text("this is not a database\n" * 100)
    with pytest.raises(StoreError, match=r"cannot open index at .*: file is not a database"):
        IndexStore(bad)
    with pytest.raises(StoreError, match="file is not a database"):
        open_reader(bad)


def test_directory_as_db(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="cannot open index at"):
        IndexStore(tmp_path)


def test_dirty_flag_repairs_fts(db_file: Path) -> None:
    st = IndexStore(db_file)
    st.apply([Upsert(_stat("/m/a.md"), _parsed("deploy runbook"))])
    # Simulate a crash: never close, and damage the FTS index behind the triggers.
    st.conn.execute("DELETE FROM files_fts_data WHERE id > 10")
    with pytest.raises(sqlite3.DatabaseError):
        _integrity_ok(st.conn)
    st.conn.close()
    st = IndexStore(db_file)
    try:
        _integrity_ok(st.conn)
        assert _fts(st.conn, "deploy") == ["/m/a.md"]
    finally:
        st.close()


def test_files_columns_are_declared_once_and_rows_go_by_name(tmp_path: Path) -> None:
    # Rows are read and written by column name: a column a migration adds but
    # FILES_TABLE lacks (or the reverse) would be dropped or fail every write.
    store = IndexStore(tmp_path / "i.db")
    migrated = tuple(r["name"] for r in store.conn.execute("PRAGMA table_info(files)"))
    assert sorted(migrated) == sorted(queries.FILES_TABLE)
    meta = {"name": "n", "status": "draft"}
    parsed = _parsed("deploy runbook", body="")
    parsed.meta = meta
    parsed.secrets = [{"line": 3, "kind": "aws"}]
    store.apply([Upsert(_stat("/m/a.md"), parsed)])
    (got,) = queries.files_under(store.conn, "/m")
    stat = store.stat_of("/m/a.md")
    store.close()
    assert stat is not None
    assert (got.filename, got.kind, got.description, got.body) == (
        "a.md",
        "memory",
        "deploy runbook",
        "",
    )
    assert (got.status, got.meta, got.secrets) == ("draft", meta, [{"line": 3, "kind": "aws"}])
    assert (stat.signature, stat.content_hash) == (
        (1_700_000_000_000_000_000, 10, 42),
        "h-deploy runbook-",
    )
