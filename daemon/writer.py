"""The single writer thread: the only code that touches the write connection.

Everything that changes the index — watcher hints, reconciles, ``reindex``,
``save`` — is a job submitted here and run in order, so there is never a
second writer to contend with and the queue depth in ``status`` is the honest
backlog.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

import structlog

from memoryd.indexer.store import IndexStore

T = TypeVar("T")
Job = tuple[Callable[[IndexStore], Any], Future[Any]]

log = structlog.get_logger("memoryd.writer")


class Writer:
    def __init__(self, store: IndexStore) -> None:
        self.store = store
        self._jobs: queue.Queue[Job | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="index-writer", daemon=True)
        self._thread.start()

    @property
    def depth(self) -> int:
        """Jobs waiting (not counting the one running)."""
        return self._jobs.qsize()

    def submit(self, job: Callable[[IndexStore], T]) -> Future[T]:
        future: Future[T] = Future()
        self._jobs.put((job, future))
        return future

    def call(self, job: Callable[[IndexStore], T], timeout: float | None = None) -> T:
        """Run ``job`` on the writer thread and wait for its result."""
        return self.submit(job).result(timeout)

    def close(self, timeout: float = 30.0) -> None:
        """Cancel queued jobs, let the running one finish, close the store cleanly.

        Only watcher hints and reconciles can still be queued at this point
        (request handlers wait for their own jobs and have all returned), and
        the next start-up reconcile redoes whatever they would have done.
        """
        while True:
            try:
                item = self._jobs.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item[1].cancel()
        self._jobs.put(None)
        self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            item = self._jobs.get()
            if item is None:
                break
            job, future = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(job(self.store))
            except BaseException as exc:  # handed to the waiter, who decides
                log.exception("writer.job_failed")
                future.set_exception(exc)
        self.store.close()
