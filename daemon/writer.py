"""The single writer thread: the only code that touches the write connection.

Everything that changes the index — watcher hints, reconciles, ``reindex``,
``save`` — is a job submitted here and run in order, so there is never a
second writer to contend with and the queue depth in ``status`` is the honest
backlog.
"""

from __future__ import annotations

import os
import queue
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

import structlog

from memoryd.indexer.store import IndexStore

T = TypeVar("T")

WAL_RESTART_BYTES = 4 * 1024 * 1024
"""Past this, the writer waits for the readers of older snapshots and starts the WAL over."""
Job = tuple[Callable[[IndexStore], Any], Future[Any], bool]

log = structlog.get_logger("memoryd.writer")


class Writer:
    def __init__(
        self, store: IndexStore, on_fatal: Callable[[str], None] = lambda reason: None
    ) -> None:
        self.store = store
        self.on_fatal = on_fatal
        self._jobs: queue.Queue[Job | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="index-writer", daemon=True)
        self._thread.start()

    @property
    def depth(self) -> int:
        """Jobs waiting (not counting the one running)."""
        return self._jobs.qsize()

    def submit(self, job: Callable[[IndexStore], T], *, keep: bool = False) -> Future[T]:
        """Queue ``job``; with ``keep`` it still runs if the writer is closed before it starts.

        Jobs that only the next start-up reconcile would redo anyway may be
        dropped at shutdown; ``keep`` is for writes nothing else would redo
        (telemetry rows, a root's last use, staleness verdicts).
        """
        future: Future[T] = Future()
        self._jobs.put((job, future, keep))
        return future

    def call(self, job: Callable[[IndexStore], T], timeout: float | None = None) -> T:
        """Run ``job`` on the writer thread and wait for its result."""
        return self.submit(job).result(timeout)

    def close(self, timeout: float = 30.0) -> None:
        """Run the kept jobs, cancel the rest, close the store cleanly.

        Request handlers that wait for their jobs have all returned by now.
        What can still be queued is watcher hints and reconciles (cancelled:
        the next start-up reconcile redoes them) and writes submitted with
        ``keep`` without waiting, such as telemetry rows, which run in order
        before the store is closed.
        """
        kept: list[Job] = []
        while True:
            try:
                item = self._jobs.get_nowait()
            except queue.Empty:
                break
            if item is not None and item[2]:
                kept.append(item)
            elif item is not None:
                item[1].cancel()
        for item in kept:
            self._jobs.put(item)
        self._jobs.put(None)
        self._thread.join(timeout)

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:  # a bug outside any job: no write can happen any more
            log.exception("writer.died")
            self.on_fatal(f"the index writer died: {exc!r}")
            raise
        finally:
            self.store.close()

    def _loop(self) -> None:
        while True:
            item = self._jobs.get()
            if item is None:
                break
            job, future, _keep = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(job(self.store))
            except BaseException as exc:  # handed to the waiter, who decides
                log.exception("writer.job_failed")
                future.set_exception(exc)
            try:
                self._restart_wal()
            except sqlite3.Error as exc:  # a reader holds it; the next job tries again
                log.warning("writer.wal_restart_failed", error=str(exc))

    def _restart_wal(self) -> None:
        """Start the WAL over once it has grown past :data:`WAL_RESTART_BYTES`.

        SQLite's own checkpoints copy pages back but restart the WAL only at a
        moment no reader holds an older snapshot, which request threads that
        read all the time may never leave; the WAL then grows and every read
        searches more of it. A TRUNCATE checkpoint waits for just those older
        readers (new ones read the checkpointed file), a few milliseconds, and
        leaves an empty WAL.
        """
        try:
            size = os.stat(f"{self.store.path}-wal").st_size
        except OSError:
            return
        if size > WAL_RESTART_BYTES:
            self.store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
