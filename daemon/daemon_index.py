"""The index the shared :class:`~memoryd.service.MemoryService` runs over in the daemon.

:class:`DaemonIndex` gives the service this thread's read-only connection,
directories kept watched, and writes queued for the writer thread; the
socket methods that use it are in daemon/query_handlers.py.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memoryd.indexer import recovery
from memoryd.select.service import record_runs, retention_of
from memoryd.service import index_pending_note

if TYPE_CHECKING:
    from memoryd.daemon.app import Daemon
    from memoryd.indexer.store import IndexStore

# How long a telemetry row may wait for others to share its commit.
FLUSH_DELAY_S = 0.01
HELD_RUNS = 10_000
"""Telemetry rows kept while the index cannot be written (~3 MB), written by the repair."""


class DaemonIndex:
    """The daemon's index: this thread's reader, directories kept watched, writes queued."""

    def __init__(self, daemon: Daemon) -> None:
        self._daemon = daemon
        self._runs: list[dict[str, Any]] = []
        self._runs_lock = threading.Lock()
        self._flush_queued = False
        self.retention = retention_of(daemon.cfg)

    def reader(self) -> sqlite3.Connection:
        return self._daemon.readers.conn()

    def directory(self, raw: str) -> str:
        return self._daemon.ensure_dir(raw)

    def refuse_root(self, directory: str) -> None:
        self._daemon.refuse_too_broad(directory)

    def saved(self, raw_dir: str, path: str) -> tuple[str, str | None]:
        directory = self._daemon.ensure_dir(raw_dir)
        writer = self._daemon.writer
        try:
            writer.call(lambda store: self._daemon.syncer(store).sync_path(path))
        except Exception as exc:
            found = recovery.trouble(exc)
            if found is None:
                raise
            writer.health.pending(path)
            return directory, index_pending_note(found[1], "the daemon's automatic retry")
        return directory, None

    def write(self, fn: Callable[[sqlite3.Connection], None]) -> None:
        """Queue ``fn`` for the writer thread, in a transaction, without waiting for it."""

        def job(store: IndexStore) -> None:
            with store.transaction() as conn:
                fn(conn)

        self._daemon.writer.submit(job, keep=True)

    def roots(self) -> list[str]:
        return list(self._daemon.roots)

    def record_run(self, record: dict[str, Any]) -> None:
        """Queue the row; shortly after, the writer inserts every row waiting in one transaction.

        Telemetry never blocks a reply. Each commit costs the writer ~0.15 ms
        of CPU (and wakes it), so rows are gathered for :data:`FLUSH_DELAY_S`
        and written together instead of one commit per select.
        """
        with self._runs_lock:
            self._runs.append(record)
            if self._flush_queued:
                return  # a flush is already due and will take this row
            self._flush_queued = True
        timer = threading.Timer(FLUSH_DELAY_S, self.queue_flush)
        timer.daemon = True
        timer.start()

    def queue_flush(self) -> None:
        self._daemon.writer.submit(self._flush_runs, keep=True)

    def _flush_runs(self, store: IndexStore) -> None:
        with self._runs_lock:
            batch, self._runs = self._runs, []
            self._flush_queued = False
        if not batch:
            return
        try:
            record_runs(store, batch, self.retention)
        except Exception as exc:
            if recovery.trouble(exc) is None:
                raise
            with self._runs_lock:  # kept for the writer's repair (the newest, within a bound)
                self._runs = [*batch, *self._runs][-HELD_RUNS:]
            raise

    def flush_held(self, store: IndexStore) -> None:
        """The writer's repair: rows kept back while the index could not be written."""
        self._flush_runs(store)

    def runs_recorded(self) -> None:
        # Every row made so far is waiting here or in a flush already queued
        # ahead of this one: once it has run, they are all in.
        self._daemon.writer.call(self._flush_runs)
