"""The index schema as an ordered list of recorded migrations.

Each migration runs once, inside the writer's transaction, and is recorded in
``_migrations`` with its name and time, so an index written by an older
memoryd is upgraded in place and a newer one is refused rather than misread.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable

import sqlite_utils

from memoryd._unicode_words import unspaced_grams
from memoryd.indexer.citations import replace_citations

Migration = Callable[[sqlite_utils.Database], None]

FTS_COLUMNS_V1 = ["filename", "name", "description", "body"]
FTS_COLUMNS = [*FTS_COLUMNS_V1, "grams"]
"""What the full-text index covers: the text, and the bigrams of its unspaced-script runs."""
FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"


def _full_text(db: sqlite_utils.Database, columns: list[str], tokenize: str) -> None:
    """The FTS5 table over ``files`` and its triggers.

    sqlite-utils' update trigger re-indexes a row on any update; a stat-only
    touch (mtime changed, same content) should not rewrite its FTS entry, so
    the update trigger fires on the indexed columns only.
    """
    db.table("files").enable_fts(columns, create_triggers=True, tokenize=tokenize)
    cols = ", ".join(f'"{c}"' for c in columns)
    old = ", ".join(f'old."{c}"' for c in columns)
    new = ", ".join(f'new."{c}"' for c in columns)
    db.execute('DROP TRIGGER "files_au"')
    db.execute(
        f'CREATE TRIGGER "files_au" AFTER UPDATE OF {cols} ON "files" BEGIN '
        f'INSERT INTO "files_fts" ("files_fts", rowid, {cols}) '
        f"VALUES ('delete', old.rowid, {old}); "
        f'INSERT INTO "files_fts" (rowid, {cols}) VALUES (new.rowid, {new}); END'
    )


def _reread(db: sqlite_utils.Database, where: str = "") -> None:
    """Forget the stat and hash of the rows ``where`` picks: the next scan parses them again."""
    db.execute(f"UPDATE files SET mtime_ns = -1, content_hash = '' {where}")


def _m001_files(db: sqlite_utils.Database) -> None:
    db.table("files").create(
        {
            "path": str,
            "directory": str,
            "filename": str,
            "kind": str,
            "name": str,
            "description": str,
            "type": str,
            "body": str,
            "project": str,
            "session": str,
            "status": str,
            "meta_json": str,
            "mtime_ns": int,
            "size": int,
            "inode": int,
            "content_hash": str,
            "error": str,
            "error_kind": str,
            "warning": str,
            "indexed_at": float,
        },
        pk="path",
        not_null={"directory", "filename", "kind", "mtime_ns", "size", "inode"},
    )
    db.table("files").create_index(["directory", "filename"])
    db.table("files").create_index(["project", "session"])
    _full_text(db, FTS_COLUMNS_V1, "porter unicode61")
    db.table("directories").create({"path": str, "version": int, "updated_at": float}, pk="path")
    db.table("roots").create({"path": str, "added_at": float, "source": str}, pk="path")
    db.table("meta").create({"key": str, "value": str}, pk="key")


def _m002_secrets(db: sqlite_utils.Database) -> None:
    # JSON list of {line, kind}; NULL when the file looks clean.
    db.table("files").add_column("secrets_json", str)


def _m003_selector_runs(db: sqlite_utils.Database) -> None:
    runs = db.table("selector_runs")
    runs.create(
        {
            "run_id": str,
            "at": float,
            "dir": str,
            "ranker": str,
            "fallback": str,
            "error": str,
            "candidates": int,
            "excluded_json": str,
            "selected_json": str,
            "dropped_unknown_json": str,
            "latency_ms": float,
            "tokens_in": int,
            "tokens_out": int,
            "query_hash": str,
            "query_len": int,
            "query": str,
        },
        pk="run_id",
    )
    runs.create_index(["at"])


def _m004_error_index(db: sqlite_utils.Database) -> None:
    # `status` counts files with errors per root; without this partial index
    # that count reads every row under the root.
    db.execute(
        "CREATE INDEX IF NOT EXISTS idx_files_errors ON files(directory) WHERE error IS NOT NULL"
    )


def _m005_rank_weights(db: sqlite_utils.Database) -> None:
    # Field weights for filename, name, description, body as the table's
    # default rank, so `ORDER BY rank` takes FTS5's fast path.
    db.execute("INSERT INTO files_fts(files_fts, rank) VALUES ('rank', 'bm25(2.0, 2.0, 3.0, 1.0)')")


def _m_request_root_last_used(db: sqlite_utils.Database) -> None:
    # Roots a request named are forgotten after an idle time, so the index
    # remembers when each was last used. Roots from the config or the command
    # line are declared at every start and no longer stored.
    db.table("roots").add_column("last_used", float)
    db.execute("UPDATE roots SET last_used = added_at")
    db.execute("DELETE FROM roots WHERE source NOT IN ('request', 'watch')")


def _m_staleness(db: sqlite_utils.Database) -> None:
    # Code citations per memory (memoryd.indexer.citations), their last verdicts and
    # the hook's cwd per folder (memoryd.staleness.results reads and writes them).
    db.execute(
        "CREATE TABLE citations (path TEXT NOT NULL, target TEXT NOT NULL, kind TEXT NOT NULL, "
        "line INTEGER, PRIMARY KEY (path, target))"
    )
    db.execute(
        "CREATE TABLE staleness (path TEXT PRIMARY KEY, content_hash TEXT, head TEXT, "
        "checkout TEXT, all_gone INTEGER NOT NULL, stale INTEGER NOT NULL, verdict_json TEXT, "
        "checked_at REAL)"
    )
    db.execute(
        "CREATE TABLE checkout_hints (directory TEXT PRIMARY KEY, cwd TEXT NOT NULL, "
        "seen_at REAL NOT NULL)"
    )
    # A memory that leaves the index takes its citations and verdict with it.
    db.execute(
        "CREATE TRIGGER files_ad_staleness AFTER DELETE ON files BEGIN "
        "DELETE FROM citations WHERE path = old.path; "
        "DELETE FROM staleness WHERE path = old.path; END"
    )
    # An index from before this migration: extract what its memories cite now.
    rows = db.execute("SELECT path, kind, description, body FROM files WHERE kind = 'memory'")
    replace_citations(db.conn, rows.fetchall())


def _m_select_term_stats(db: sqlite_utils.Database) -> None:
    # The local ranker's per-field term counts of each usable memory
    # (memoryd.select.analysis), written with the row; the store fills rows
    # indexed before this column existed when it opens the index.
    db.table("files").add_column("terms_json", str)


def _m_terms_packed(db: sqlite_utils.Database) -> None:
    # Term statistics move from JSON text to packed bytes (memoryd.select.analysis
    # .encode): the column is renamed, and the changed analysis version makes the
    # store rewrite every value when it opens the index.
    db.execute("ALTER TABLE files RENAME COLUMN terms_json TO terms")


def _m_reread_nested_headers(db: sqlite_utils.Database) -> None:
    # Memories whose type (or name, description) sits under a nested
    # `metadata:` (Claude Code 2.1's format) were indexed untyped or as broken.
    _reread(db, "WHERE kind = 'memory' AND (type IS NULL OR error IS NOT NULL)")


def _m_unspaced_grams(db: sqlite_utils.Database) -> None:
    # unicode61 keeps a run of Chinese or Japanese characters as one token, so
    # no word inside a run could be found: each memory row now also stores the
    # character bigrams of such runs (memoryd._unicode_words), and the FTS5
    # table is rebuilt over them too, folding every diacritic (remove_diacritics 2).
    db.table("files").add_column("grams", str)
    rows = db.execute(
        "SELECT rowid, filename, name, description, body FROM files "
        "WHERE kind = 'memory' AND error IS NULL"
    ).fetchall()
    db.conn.executemany(
        "UPDATE files SET grams = ? WHERE rowid = ?",
        [(g, r[0]) for r in rows if (g := unspaced_grams(*(t or "" for t in r[1:])))],
    )
    for trigger in ("files_ai", "files_ad", "files_au"):
        db.execute(f'DROP TRIGGER IF EXISTS "{trigger}"')
    db.execute("DROP TABLE files_fts")
    _full_text(db, FTS_COLUMNS, FTS_TOKENIZER)
    db.execute("INSERT INTO files_fts(files_fts) VALUES ('rebuild')")
    db.execute(
        "INSERT INTO files_fts(files_fts, rank) VALUES ('rank', 'bm25(2.0, 2.0, 3.0, 1.0, 2.0)')"
    )
    # Memories now keep header facts (related:, status, dates; a type under
    # metadata:) that older parses dropped.
    _reread(db, "WHERE kind = 'memory'")


def _m_judge_telemetry(db: sqlite_utils.Database) -> None:
    # Which judge a run asked (its answer used or not), how many memories it
    # was shown and how long it took.
    runs = db.table("selector_runs")
    runs.add_column("judge", str)
    runs.add_column("shortlist", int)
    runs.add_column("judge_ms", float)


def _m_reread_after_parse_hardening(db: sqlite_utils.Database) -> None:
    # Every file is parsed again once: headers YAML cannot build (bad dates,
    # tags) and plain `key: value` headers are now read, names and descriptions
    # are capped, and more credential shapes are flagged and redacted (rows
    # written before held them raw).
    _reread(db)


def _m_runs_session_detail(db: sqlite_utils.Database) -> None:
    # `memoryd why` explains a session's runs: each row keeps the client's
    # session label and, per run, the picks' ranks and what each rule left out
    # (memoryd.select.telemetry.make_record writes both).
    db.table("selector_runs").add_column("session_id", str)
    db.table("selector_runs").add_column("detail_json", str)
    db.execute("CREATE INDEX idx_selector_runs_session ON selector_runs(session_id, at)")


def _m_drop_term_stats(db: sqlite_utils.Database) -> None:
    # The ranker works out a folder's term statistics in memory from the stored
    # text: the stored per-memory terms and their analysis stamp go. An SQLite
    # older than 3.35 cannot drop a column: the values go, the empty column stays.
    try:
        db.execute("ALTER TABLE files DROP COLUMN terms")
    except sqlite3.OperationalError:
        db.execute("UPDATE files SET terms = NULL")
    db.execute("DELETE FROM meta WHERE key = 'analysis_version'")


MIGRATIONS: list[tuple[str, Migration]] = [
    ("001_files_fts_directories_roots", _m001_files),
    ("002_secret_flags", _m002_secrets),
    ("003_selector_runs", _m003_selector_runs),
    ("004_partial_index_on_errors", _m004_error_index),
    ("005_fts_rank_weights", _m005_rank_weights),
    ("006_request_root_last_used", _m_request_root_last_used),
    ("007_staleness_citations_verdicts_hints", _m_staleness),
    ("008_select_term_stats", _m_select_term_stats),
    ("009_packed_term_stats", _m_terms_packed),
    ("010_reread_nested_metadata_headers", _m_reread_nested_headers),
    ("011_unspaced_script_bigrams", _m_unspaced_grams),
    ("012_selector_runs_judge", _m_judge_telemetry),
    ("013_reread_after_parse_hardening", _m_reread_after_parse_hardening),
    ("014_selector_runs_session_detail", _m_runs_session_detail),
    ("015_drop_term_stats", _m_drop_term_stats),
]

_NAMES = [name for name, _ in MIGRATIONS]


def applied(db: sqlite_utils.Database) -> list[str]:
    if "_migrations" not in db.table_names():
        return []
    return [row["name"] for row in db.query("SELECT name FROM _migrations ORDER BY id")]


def needs_migration(db: sqlite_utils.Database) -> bool:
    """Whether :func:`migrate` has anything to do (or to refuse): a read, no lock taken."""
    return applied(db) != _NAMES


def migrate(db: sqlite_utils.Database) -> None:
    """Apply pending migrations in order.

    The caller holds a write transaction. Raises ValueError for an index
    written by a newer memoryd (unknown migration names).
    """
    if "_migrations" not in db.table_names():
        db.table("_migrations").create({"id": int, "name": str, "applied_at": float}, pk="id")
    done = applied(db)
    unknown = [name for name in done if name not in _NAMES]
    if unknown:
        raise ValueError(
            f"the index was written by a newer memoryd (unknown migrations: {', '.join(unknown)})"
        )
    for number, (name, step) in enumerate(MIGRATIONS, start=1):
        if name in done:
            continue
        step(db)
        db.table("_migrations").insert({"id": number, "name": name, "applied_at": time.time()})
