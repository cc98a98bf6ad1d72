"""The SQLite index: one writer connection (:class:`IndexStore`, one thread, every write
in ``BEGIN IMMEDIATE``), and read-only readers (:func:`open_reader`) beside it in WAL mode."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from urllib.parse import quote

import sqlite_utils

from memoryd.errors import StoreError
from memoryd.indexer.citations import replace_citations
from memoryd.indexer.queries import under, under_args
from memoryd.indexer.records import (
    CITED,
    INSERT_SQL,
    KIND_MEMORY,
    STAT_COLUMNS,
    UPSERT_SQL,
    Change,
    Delete,
    Row,
    StoredStat,
    Touch,
    Upsert,
    file_row,
)
from memoryd.indexer.schema import migrate, needs_migration
from memoryd.paths import make_private_dirs

BUSY_TIMEOUT_MS = 10_000

SIDE_FILES = ("-wal", "-shm")
"""What SQLite keeps beside the database file in WAL mode, by suffix."""


def _make_private(path: Path) -> None:
    """Create the index file 0600 (missing parent dirs 0700), whatever the umask.

    The WAL and shared-memory files get the database's mode. Our files open to
    others are tightened; existing directories are left alone (``--db /tmp/x.db``).
    """
    make_private_dirs(path.parent)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    os.close(fd)
    for suffix in ("", *SIDE_FILES):
        with contextlib.suppress(OSError):
            file = Path(f"{path}{suffix}")
            st = file.stat()
            if st.st_uid == os.getuid() and st.st_mode & 0o077:
                os.chmod(file, 0o600)


def connect_ro(path: Path) -> sqlite3.Connection:
    """A bare read-only connection to the database at ``path`` (raises sqlite3.Error)."""
    return sqlite3.connect(
        f"file:{quote(str(path))}?mode=ro", uri=True, isolation_level=None, check_same_thread=False
    )


def _connect(path: Path, *, readonly: bool) -> sqlite3.Connection:
    try:
        if readonly:
            conn = connect_ro(path)
        else:
            _make_private(path)
            conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if not readonly:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
        # "file is not a database" surfaces here, not later.
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except (sqlite3.Error, OSError) as exc:
        raise StoreError(f"cannot open index at {path}: {exc}") from None
    conn.row_factory = sqlite3.Row
    return conn


def _identities(path: Path) -> dict[str, tuple[int, int]]:
    found = {}
    for suffix in ("", *SIDE_FILES):
        with contextlib.suppress(OSError):
            st = os.stat(f"{path}{suffix}")
            found[suffix] = (st.st_dev, st.st_ino)
    return found


def process_alive(pid: int) -> bool:
    """Whether another process with this pid runs (ours counts as not: it is the caller)."""
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:  # it exists, under another uid
        return True
    return True


def _alive_writer(marker: str) -> bool:
    """Whether the process named by a ``dirty:<pid>`` marker is still running."""
    pid = marker.partition(":")[2]
    return pid.isdigit() and process_alive(int(pid))


def open_reader(path: Path) -> sqlite3.Connection:
    """A read-only connection for one reader thread or one request."""
    if not path.exists():
        raise StoreError(f"no index at {path} (run `memoryd index DIR` or start the daemon)")
    return _connect(path, readonly=True)


class IndexStore:
    """Owns the write connection (not thread-safe: give it one thread)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn = _connect(path, readonly=False)
        self.files = _identities(path)
        """(device, inode) of the database and its ``-wal``/``-shm`` as opened, by suffix."""
        self.generation = 0
        """Bumped after every write commits: readers in this process key caches on it."""
        self.db = sqlite_utils.Database(self.conn)
        try:
            # An up-to-date index opens without the write lock (a full disk does not stop it).
            if needs_migration(self.db):
                with self.transaction():
                    migrate(self.db)
        except (sqlite3.Error, ValueError) as exc:
            self.conn.close()
            raise StoreError(f"cannot migrate index at {path}: {exc}") from None
        self._repair_if_dirty()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT``, rolled back on any exception; a failed
        ``BEGIN`` raises :class:`StoreError` caused by SQLite's error."""
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write index at {self.path}: {exc}") from exc
        try:
            yield self.conn
            self.conn.execute("COMMIT")
        except BaseException:
            if self.conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    self.conn.execute("ROLLBACK")
            raise

    def probe(self) -> None:
        """One tiny write: whether the index can be written at all now (raises if not)."""
        self._set_meta("probe", str(time.time()))

    def set_busy_timeout(self, ms: int) -> None:
        """How long a write waits for another process's lock before failing."""
        self.conn.execute(f"PRAGMA busy_timeout = {int(ms)}")

    def _repair_if_dirty(self) -> None:
        """After an unclean stop (a ``dirty:<pid>`` marker of a dead writer), check the
        full-text index and rebuild it if damaged."""
        markers = self.conn.execute(
            "SELECT key, value FROM meta WHERE key LIKE 'dirty:%'"
        ).fetchall()
        crashed = [key for key, value in markers if value == "1" and not _alive_writer(key)]
        if crashed:
            try:
                self.conn.execute("INSERT INTO files_fts(files_fts) VALUES ('integrity-check')")
            except sqlite3.DatabaseError:
                with self.transaction():
                    self.conn.execute("INSERT INTO files_fts(files_fts) VALUES ('rebuild')")
            with self.transaction() as conn:
                conn.executemany("DELETE FROM meta WHERE key = ?", [(k,) for k in crashed])
        try:
            self._set_meta(self._marker, "1")
        except StoreError as exc:
            if not isinstance(exc.__cause__, sqlite3.OperationalError):
                raise
            # A full disk or a held lock: only an unclean stop of this run goes unnoticed.

    @property
    def _marker(self) -> str:
        return f"dirty:{os.getpid()}"

    def close(self) -> None:
        """Mark a clean stop, fold the WAL back (TRUNCATE), close; safe to call twice."""
        with contextlib.suppress(sqlite3.Error, StoreError):
            with self.transaction() as conn:
                conn.execute("DELETE FROM meta WHERE key = ?", (self._marker,))
            self.conn.execute("PRAGMA optimize")
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        with contextlib.suppress(sqlite3.Error):
            self.conn.close()

    def _set_meta(self, key: str, value: str) -> None:
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO meta(key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    def stats_in(self, directory: str) -> dict[str, StoredStat]:
        """Change-detection columns for the files directly in ``directory``."""
        rows = self.conn.execute(
            f"SELECT path, {STAT_COLUMNS} FROM files WHERE directory = ?", (directory,)
        )
        return {r[0]: StoredStat(*r[1:]) for r in rows}

    def paths_in(self, directory: str) -> set[str]:
        """The paths of the files indexed directly in ``directory`` (no other column)."""
        rows = self.conn.execute("SELECT path FROM files WHERE directory = ?", (directory,))
        return {r[0] for r in rows}

    def stat_of(self, path: str) -> StoredStat | None:
        """Change-detection columns of one path's row, if it has one."""
        r = self.conn.execute(
            f"SELECT {STAT_COLUMNS} FROM files WHERE path = ?", (path,)
        ).fetchone()
        return None if r is None else StoredStat(*r)

    def directories_under(self, root: str) -> list[str]:
        """Indexed directories equal to or below ``root``."""
        rows = self.conn.execute(
            f"SELECT DISTINCT directory FROM files WHERE {under('directory')}", under_args(root)
        )
        return [r["directory"] for r in rows]

    def apply(self, changes: Sequence[Change]) -> int:
        """Write ``changes`` in one transaction; bump each touched directory's version."""
        if not changes:
            return 0
        now = time.time()
        upserts = [file_row(c.stat, c.parsed, now) for c in changes if isinstance(c, Upsert)]
        touches = [
            (c.stat.mtime_ns, c.stat.size, c.stat.inode, now, c.stat.path)
            for c in changes
            if isinstance(c, Touch)
        ]
        deletes = [(c.path,) for c in changes if isinstance(c, Delete)]
        dirs = {os.path.dirname(c.path if isinstance(c, Delete) else c.stat.path) for c in changes}
        before = self.conn.total_changes
        with self.transaction() as conn:
            if deletes:
                conn.executemany("DELETE FROM files WHERE path = ?", deletes)
            if upserts:
                conn.executemany(UPSERT_SQL, upserts)
                replace_citations(conn, map(CITED, upserts))
            if touches:
                conn.executemany(
                    "UPDATE files SET mtime_ns = ?, size = ?, inode = ?, indexed_at = ? "
                    "WHERE path = ?",
                    touches,
                )
            _bump_versions(conn, dirs, now)
        self.generation += 1
        return self.conn.total_changes - before

    def is_empty(self) -> bool:
        return self.conn.execute("SELECT 1 FROM files LIMIT 1").fetchone() is None

    def load_fresh(self, rows: Iterable[Row]) -> int:
        """Fill an empty index in one transaction, building the full-text index once.

        The insert trigger is dropped and put back inside the transaction, so no
        other writer sees the table without it. What ``rows`` yields is committed.
        """
        before = self.conn.total_changes
        with self.transaction() as conn:
            (trigger,) = conn.execute(
                "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'files_ai'"
            ).fetchone()
            conn.execute('DROP TRIGGER "files_ai"')
            # Another writer may have indexed some of these paths since the caller looked.
            empty = conn.execute("SELECT 1 FROM files LIMIT 1").fetchone() is None
            conn.executemany(INSERT_SQL if empty else UPSERT_SQL, rows)
            conn.execute("INSERT INTO files_fts(files_fts) VALUES ('rebuild')")
            conn.execute(trigger)
            # Every row is this load's, already redacted; into a table still empty
            # inside the transaction, no row has citations to delete.
            rows_read = conn.execute(
                "SELECT path, kind, description, body FROM files WHERE kind = ?", (KIND_MEMORY,)
            )
            while chunk := rows_read.fetchmany(500):
                replace_citations(conn, chunk, fresh=empty)
            dirs = [r[0] for r in conn.execute("SELECT DISTINCT directory FROM files")]
            _bump_versions(conn, dirs, time.time())
        self.generation += 1
        return self.conn.total_changes - before

    def save_root(self, path: str, source: str, last_used: float) -> None:
        """Record (or update) a root the daemon must remember across restarts."""
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO roots(path, added_at, source, last_used) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(path) DO UPDATE SET source = excluded.source, "
                "last_used = excluded.last_used",
                (path, time.time(), source, last_used),
            )

    def root_rows(self) -> list[tuple[str, str, float]]:
        """Remembered roots as (path, source, last used)."""
        rows = self.conn.execute(
            "SELECT path, source, coalesce(last_used, added_at) FROM roots ORDER BY path"
        )
        return [(r[0], r[1], r[2]) for r in rows]

    def forget_root(self, root: str, keep: Sequence[str]) -> int:
        """Drop ``root``'s record and its files' rows (through :meth:`apply`), except
        rows under a root in ``keep``."""
        with self.transaction() as conn:
            conn.execute("DELETE FROM roots WHERE path = ?", (root,))
        rows = self.conn.execute(
            "SELECT path FROM files WHERE path >= ? AND path < ?", (root + "/", root + "0")
        )
        kept = [k.rstrip("/") + "/" for k in keep]
        gone = [Delete(r["path"]) for r in rows if not any(r[0].startswith(k) for k in kept)]
        self.apply(gone)
        return len(gone)


def _bump_versions(conn: sqlite3.Connection, dirs: Iterable[str], now: float) -> None:
    conn.executemany(
        "INSERT INTO directories(path, version, updated_at) VALUES (?, 1, ?) "
        "ON CONFLICT(path) DO UPDATE SET version = version + 1, "
        "updated_at = excluded.updated_at",
        [(d, now) for d in sorted(dirs)],
    )
