"""The index schema as an ordered list of recorded migrations.

Each migration runs once, inside the writer's transaction, and is recorded in
``_migrations``: an index written by an older memoryd is upgraded in place, one
written by a newer memoryd (a migration this one does not know) is refused, and
one written by an unreleased build is emptied and made afresh (it is a cache of
the files).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import sqlite_utils

Migration = Callable[[sqlite_utils.Database], None]

_FTS_COLUMNS = ("filename", "name", "description", "body", "grams")
"""What the full-text index covers: the text, and the bigrams of its unspaced-script runs."""
_FTS = ", ".join(_FTS_COLUMNS)


def _fts_row(row: str) -> str:
    return ", ".join(f"{row}.{column}" for column in _FTS_COLUMNS)


_SCHEMA = (
    """CREATE TABLE files (
        path TEXT PRIMARY KEY, directory TEXT NOT NULL, filename TEXT NOT NULL,
        kind TEXT NOT NULL, name TEXT, description TEXT, type TEXT, body TEXT, project TEXT,
        session TEXT, status TEXT, meta_json TEXT, mtime_ns INTEGER NOT NULL,
        size INTEGER NOT NULL, inode INTEGER NOT NULL, content_hash TEXT, error TEXT,
        error_kind TEXT, warning TEXT, indexed_at REAL, secrets_json TEXT, grams TEXT)""",
    "CREATE INDEX idx_files_directory_filename ON files (directory, filename)",
    "CREATE INDEX idx_files_project_session ON files (project, session)",
    # `status` counts the files with errors under a root from this index alone.
    "CREATE INDEX idx_files_errors ON files (directory) WHERE error IS NOT NULL",
    f"""CREATE VIRTUAL TABLE files_fts USING FTS5 ({_FTS},
        tokenize='porter unicode61 remove_diacritics 2', content="files")""",
    # Field weights as the default rank, so `ORDER BY rank` takes FTS5's fast path.
    "INSERT INTO files_fts(files_fts, rank) VALUES ('rank', 'bm25(2.0, 2.0, 3.0, 1.0, 2.0)')",
    f"""CREATE TRIGGER files_ai AFTER INSERT ON files BEGIN
        INSERT INTO files_fts (rowid, {_FTS}) VALUES (new.rowid, {_fts_row("new")}); END""",
    f"""CREATE TRIGGER files_ad AFTER DELETE ON files BEGIN
        INSERT INTO files_fts (files_fts, rowid, {_FTS})
        VALUES ('delete', old.rowid, {_fts_row("old")}); END""",
    # Only a change of the indexed text rewrites its FTS entry (not a stat-only touch).
    f"""CREATE TRIGGER files_au AFTER UPDATE OF {_FTS} ON files BEGIN
        INSERT INTO files_fts (files_fts, rowid, {_FTS})
        VALUES ('delete', old.rowid, {_fts_row("old")});
        INSERT INTO files_fts (rowid, {_FTS}) VALUES (new.rowid, {_fts_row("new")}); END""",
    "CREATE TABLE directories (path TEXT PRIMARY KEY, version INTEGER, updated_at REAL)",
    """CREATE TABLE roots (
        path TEXT PRIMARY KEY, added_at REAL, source TEXT, last_used REAL)""",
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)",
    """CREATE TABLE selector_runs (
        run_id TEXT PRIMARY KEY, at REAL, dir TEXT, ranker TEXT, fallback TEXT, error TEXT,
        candidates INTEGER, excluded_json TEXT, selected_json TEXT, dropped_unknown_json TEXT,
        latency_ms REAL, tokens_in INTEGER, tokens_out INTEGER, query_hash TEXT,
        query_len INTEGER, query TEXT, judge TEXT, shortlist INTEGER, judge_ms REAL,
        session_id TEXT, detail_json TEXT)""",
    "CREATE INDEX idx_selector_runs_at ON selector_runs (at)",
    "CREATE INDEX idx_selector_runs_session ON selector_runs (session_id, at)",
    # A memory's code citations (written with its row), their last verdicts, and the
    # hook's cwd per folder; a memory that leaves the index takes its own with it.
    """CREATE TABLE citations (path TEXT NOT NULL, target TEXT NOT NULL, kind TEXT NOT NULL,
        line INTEGER, PRIMARY KEY (path, target))""",
    """CREATE TABLE staleness (path TEXT PRIMARY KEY, content_hash TEXT, head TEXT,
        checkout TEXT, all_gone INTEGER NOT NULL, stale INTEGER NOT NULL, verdict_json TEXT,
        checked_at REAL)""",
    """CREATE TABLE checkout_hints (directory TEXT PRIMARY KEY, cwd TEXT NOT NULL,
        seen_at REAL NOT NULL)""",
    """CREATE TRIGGER files_ad_staleness AFTER DELETE ON files BEGIN
        DELETE FROM citations WHERE path = old.path;
        DELETE FROM staleness WHERE path = old.path; END""",
)


def _create(db: sqlite_utils.Database) -> None:
    for statement in _SCHEMA:
        db.execute(statement)


MIGRATIONS: list[tuple[str, Migration]] = [("001_index", _create)]

_NAMES = [name for name, _ in MIGRATIONS]
UNRELEASED = "001_files_fts_directories_roots"
"""The first migration of the builds before 0.1.0, whose steps this one no longer has."""


def _drop_everything(db: sqlite_utils.Database) -> None:
    """Every table but ``_migrations`` (virtual ones first: they own their shadow tables)."""
    for kind in ("CREATE VIRTUAL TABLE%", "%"):
        rows = db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE ?"
            " AND name NOT LIKE 'sqlite_%' AND name != '_migrations'",
            [kind],
        ).fetchall()
        for (name,) in rows:
            db.execute(f'DROP TABLE IF EXISTS "{name}"')
    db.execute("DELETE FROM _migrations")


def applied(db: sqlite_utils.Database) -> list[str]:
    if "_migrations" not in db.table_names():
        return []
    return [row["name"] for row in db.query("SELECT name FROM _migrations ORDER BY id")]


def needs_migration(db: sqlite_utils.Database) -> bool:
    """Whether :func:`migrate` has anything to do (or to refuse): a read, no lock taken."""
    return applied(db) != _NAMES


def migrate(db: sqlite_utils.Database) -> None:
    """Apply pending migrations in order (the caller holds a write transaction); raise
    ValueError for an index written by a newer memoryd (unknown migration names)."""
    if "_migrations" not in db.table_names():
        db.execute("CREATE TABLE _migrations (id INTEGER PRIMARY KEY, name TEXT, applied_at REAL)")
    done = applied(db)
    if done[:1] == [UNRELEASED]:
        _drop_everything(db)
        done = []
    unknown = [name for name in done if name not in _NAMES]
    if unknown:
        raise ValueError(
            f"the index was written by a newer memoryd (unknown migrations: {', '.join(unknown)})"
        )
    for number, (name, step) in enumerate(MIGRATIONS, start=1):
        if name not in done:
            step(db)
            db.table("_migrations").insert({"id": number, "name": name, "applied_at": time.time()})
