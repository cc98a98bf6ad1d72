"""The single writer thread: the only code that touches the write connection.

Every change to the index is a job run here in submission order. A job the
index refuses makes the writer ``degraded`` (:mod:`memoryd.daemon.health`): it
drops watcher hints and runs its *repair*, with backoff, until one succeeds. A
damaged, deleted or replaced index file is set aside and a new one opened, which
the repair fills.
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

from memoryd.daemon.health import BUSY_MS, SHORT_BUSY_MS, Health
from memoryd.indexer import recovery
from memoryd.indexer.store import IndexStore

T = TypeVar("T")

FILE_CHECK_S = 1.0  # how often an idle writer checks the index file is still its own
WAL_RESTART_BYTES = 4 * 1024 * 1024
Job = tuple[Callable[[IndexStore], Any], Future[Any], bool, bool]  # job, future, keep, hint

log = structlog.get_logger("memoryd.writer")


class Writer:
    """Runs jobs on one thread; ``repair`` catches up after failed writes, ``on_rebuilt``
    drops readers and caches of a replaced database (both on this thread)."""

    def __init__(
        self,
        store: IndexStore,
        on_fatal: Callable[[str], None] = lambda reason: None,
        *,
        repair: Callable[[IndexStore], object] = lambda store: None,
        on_rebuilt: Callable[[], None] = lambda: None,
    ) -> None:
        self.store = store
        self.on_fatal = on_fatal
        self.repair = repair
        self.on_rebuilt = on_rebuilt
        self.health = Health()
        store.set_busy_timeout(BUSY_MS)
        self._jobs: queue.Queue[Job | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="index-writer", daemon=True)
        self._thread.start()

    @property
    def depth(self) -> int:
        """Jobs waiting (not counting the one running)."""
        return self._jobs.qsize()

    def submit(
        self, job: Callable[[IndexStore], T], *, keep: bool = False, hint: bool = False
    ) -> Future[T]:
        """Queue ``job``. A ``keep`` job still runs at shutdown (a write nothing else would redo:
        telemetry, a root's last use, verdicts); a ``hint`` is skipped while degraded."""
        future: Future[T] = Future()
        self._jobs.put((job, future, keep, hint))
        return future

    def report_damage(self, store: IndexStore, reason: str) -> None:
        """A reader found ``store``'s database damaged: rebuild it (once, on this thread)."""

        def rebuild(current: IndexStore) -> None:
            if current is store:  # not already replaced for an earlier report
                self._rebuild(reason)

        self.submit(rebuild, keep=True)

    def call(self, job: Callable[[IndexStore], T]) -> T:
        """Run ``job`` on the writer thread and wait for its result."""
        return self.submit(job).result()

    def close(self, timeout: float = 30.0) -> None:
        """Run the kept jobs (in order), cancel the rest (the next start-up redoes them), close
        the store cleanly."""
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
            self._check_file()
            due = self.health.wait_s()
            wait = FILE_CHECK_S if due is None else min(due, FILE_CHECK_S)
            try:
                item = self._jobs.get(timeout=wait)
            except queue.Empty:
                if self.health.wait_s() == 0.0:  # a repair is due
                    self._repair()
                continue
            if item is None:
                break
            job, future, _keep, hint = item
            if not future.set_running_or_notify_cancel():
                continue
            if hint and self.health.degraded:
                future.set_result(None)  # the repair reconciles every root anyway
                continue
            try:
                future.set_result(job(self.store))
            except BaseException as exc:  # handed to the waiter, who decides
                self._failed(exc)
                future.set_exception(exc)
            try:
                self._restart_wal()
            except sqlite3.Error as exc:  # a reader holds it, or no space: the next job tries
                log.warning("writer.wal_restart_failed", error=str(exc))

    def _failed(self, exc: BaseException, *, repair: bool = False) -> None:
        """A job (or the ``repair``) raised: note a storage failure (degraded or rebuild); log
        anything else (a repair failing so is retried later all the same)."""
        found = recovery.trouble(exc)
        if found is None:
            log.exception("index.repair_failed" if repair else "writer.job_failed")
            if not repair:
                return
        elif found[0] == recovery.DAMAGED:
            self._rebuild(found[1])
            return
        first = not self.health.degraded
        delay = self.health.failed(found[1] if found else f"repair failed: {exc}", repair=repair)
        self.store.set_busy_timeout(SHORT_BUSY_MS)
        event = "index.degraded" if first else "index.write_failed"
        log.warning(
            "index.repair_failed" if repair else event,
            reason=self.health.reason,
            retry_in_s=round(delay, 1),
        )

    def _repair(self) -> None:
        """Catch up after failed writes, after a probe (one tiny write: all a retry costs while
        the disk is still full); a failure only pushes the next try back."""
        try:
            self.store.probe()
        except Exception as exc:
            self._failed(exc)
            return
        try:
            self.repair(self.store)
        except Exception as exc:
            self._failed(exc, repair=True)
            return
        log.info("index.recovered", after_failures=self.health.failures)
        self.health.recovered()
        self.store.set_busy_timeout(BUSY_MS)

    def _check_file(self) -> None:
        """Start over if the index file was deleted or replaced."""
        why = recovery.replaced(self.store)
        if why is not None:
            self._rebuild(why, damaged=False)

    def _rebuild(self, reason: str, *, damaged: bool = True) -> None:
        """Set the damaged database aside (or let go of a deleted or replaced one), open a
        new one; the repair fills it from the files."""
        log.error("index.damaged_while_running" if damaged else "index.file_lost", reason=reason)
        self.health.rebuilding(reason)
        old = self.store
        old.close()
        try:
            if damaged:
                store, moved = recovery.open_or_recover(old.path, found=reason)
            else:
                store, moved = recovery.reopen(old, reason)
        except Exception as exc:  # cannot even start over (no space for a new file)
            self.on_fatal(f"the index is damaged and cannot be rebuilt: {exc}")
            raise
        store.generation = old.generation + 1  # caches keyed on it see a change
        store.set_busy_timeout(SHORT_BUSY_MS)
        self.store = store
        if moved is not None:
            log.error("index.recovered_from_damage", moved_to=str(moved.moved_to))
        self.on_rebuilt()

    def _restart_wal(self) -> None:
        """Start the WAL over past :data:`WAL_RESTART_BYTES`: TRUNCATE waits for the readers of
        older snapshots, which busy request threads may otherwise never let go."""
        try:
            size = os.stat(f"{self.store.path}-wal").st_size
        except OSError:
            return
        if size > WAL_RESTART_BYTES:
            self.store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
