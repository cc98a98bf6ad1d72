"""The index as the daemon's requests see it: a read-only connection per thread, writes queued.

:class:`DaemonIndex` is the :class:`~memoryd.service.MemoryService`'s index:
this thread's reader, directories kept watched, writes as writer jobs. A
``select``'s telemetry row is one queued job, so it never holds up the reply;
:class:`RunRows` keeps the rows the index refused until the writer's repair.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

from memoryd.config import Config
from memoryd.daemon.roots import WatchedRoots
from memoryd.daemon.writer import Writer
from memoryd.indexer import recovery
from memoryd.indexer.store import IndexStore, open_reader
from memoryd.select.telemetry import RunRecord
from memoryd.select.wiring import record_runs, retention_of

HELD_RUNS = 10_000
"""Telemetry rows kept (the newest) while the index cannot be written."""


class Readers:
    """Each thread's own ``mode=ro`` connection, kept for its life and closed as it ends."""

    def __init__(self, db_path: Path) -> None:
        self.db_path = db_path
        self._local = threading.local()
        self._epoch = 0

    def reset(self) -> None:
        """The database file was replaced (rebuilt after damage): every thread reopens."""
        self._epoch += 1

    def release(self) -> None:
        """This thread is ending: its connection is closed now, not when it is collected."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            self._local.conn = None
            conn.close()

    def conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None and self._local.epoch != self._epoch:
            conn.close()  # this thread's own connection, to the file set aside
            conn = None
        if conn is None:
            conn = open_reader(self.db_path)
            self._local.conn, self._local.epoch = conn, self._epoch
        return conn


class RunRows:
    """Telemetry rows written on the writer thread, held back while the index refuses them."""

    def __init__(self, cfg: Config) -> None:
        self._held: list[RunRecord] = []
        self._lock = threading.Lock()
        self.retention = retention_of(cfg)

    def reconfigure(self, cfg: Config) -> None:
        self.retention = retention_of(cfg)

    def write(self, store: IndexStore, rows: list[RunRecord]) -> None:
        """Write ``rows`` after any held back; if the index refuses them, hold them all."""
        with self._lock:
            batch, self._held = [*self._held, *rows], []
        if not batch:
            return
        try:
            record_runs(store, batch, self.retention)
        except Exception as exc:
            if recovery.trouble(exc) is None:
                raise
            with self._lock:
                self._held = [*batch, *self._held][-HELD_RUNS:]
            raise


class DaemonIndex:
    """The daemon's index: this thread's reader, directories kept watched, writes queued."""

    def __init__(
        self, readers: Readers, writer: Writer, roots: WatchedRoots, runs: RunRows
    ) -> None:
        self._readers = readers
        self._writer = writer
        self._roots = roots
        self._runs = runs

    def reader(self) -> sqlite3.Connection:
        return self._readers.conn()

    def directory(self, raw: str) -> str:
        return self._roots.ensure_dir(raw)

    def refuse_root(self, directory: str) -> None:
        self._roots.refuse_too_broad(directory)

    def saved(self, raw_dir: str, path: str) -> tuple[str, str | None]:
        directory = self._roots.ensure_dir(raw_dir)
        writer = self._writer
        try:
            writer.call(lambda store: self._roots.syncer(store).sync_path(path))
        except Exception as exc:
            found = recovery.trouble(exc)
            if found is None:
                raise
            writer.health.pending(path)
            return directory, (
                f"saved to disk, but the index cannot be written now ({found[1]}): load_last "
                "and context see this session once the daemon's automatic retry indexes it"
            )
        return directory, None

    def write(self, fn: Callable[[sqlite3.Connection], None]) -> None:
        """Queue ``fn`` for the writer thread, in a transaction, without waiting for it."""

        def job(store: IndexStore) -> None:
            with store.transaction() as conn:
                fn(conn)

        self._writer.submit(job, keep=True)

    def roots(self) -> list[str]:
        return self._roots.paths()

    def record_run(self, record: RunRecord) -> None:
        """Queue the row for the writer (kept at shutdown); telemetry never blocks a reply."""
        self._writer.submit(lambda store: self._runs.write(store, [record]), keep=True)

    def runs_recorded(self) -> None:
        # Every row recorded so far is a job queued ahead of this one.
        self._writer.call(lambda store: self._runs.write(store, []))
