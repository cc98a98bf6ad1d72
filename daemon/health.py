"""Whether the index can be written now, when the writer tries again, and the request guard.

A storage failure (a full disk, another process's lock) makes the state
``degraded`` (reads go on, hints are dropped, a repair is due after a doubling
backoff) until a repair succeeds; damage or a lost file makes it ``rebuilding``.
:func:`guard` holds requests until the first index and answers storage trouble with
``index_unavailable``.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memoryd.errors import IndexUnavailable, InternalError, StoreError
from memoryd.indexer import recovery
from memoryd.indexer.queries import iso_utc
from memoryd.indexer.store import IndexStore
from memoryd.ipc.server import Handler
from memoryd.methods import METHODS
from memoryd.replies import IndexHealth

if TYPE_CHECKING:
    from memoryd.daemon.lifecycle import Lifecycle
    from memoryd.daemon.writer import Writer

OK, DEGRADED, REBUILDING = "ok", "degraded", "rebuilding"
FIRST_BACKOFF_S = 0.5
MAX_BACKOFF_S = 5.0
MAX_REPAIR_BACKOFF_S = 60.0
BUSY_MS = 2000  # a write waits this long for another process's lock, then the repair retries
SHORT_BUSY_MS = 200  # the same while degraded
REBUILD_WAIT_S = 5.0  # a request waits this long for a rebuilt index, then index_unavailable


class Health:
    """The index writer's state; read by any thread, changed by the writer thread."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.RLock()
        self.state = OK
        self.reason: str | None = None
        self.since: float | None = None
        self.failures = 0
        self.repair_failures = 0
        self.recovered_at: float | None = None
        self._due: float | None = None
        self._pending: set[str] = set()

    @property
    def degraded(self) -> bool:
        return self.state != OK

    def failed(self, reason: str, *, repair: bool = False) -> float:
        """A write (or, with ``repair``, a repair past its probe) failed: degraded; the delay to
        the next try (up to :data:`MAX_BACKOFF_S`, a repair's :data:`MAX_REPAIR_BACKOFF_S`)."""
        with self._lock:
            if self.state == OK:
                self.state, self.since = DEGRADED, time.time()
            self.reason = reason
            self.failures += 1
            delay = _backoff(self.failures, MAX_BACKOFF_S)
            if repair:
                self.repair_failures += 1
                delay = max(delay, _backoff(self.repair_failures + 4, MAX_REPAIR_BACKOFF_S))
            self._due = self._clock() + delay
            return delay

    def rebuilding(self, reason: str) -> None:
        """Damage was found: the index is being set aside and filled again, repair now."""
        with self._lock:
            self.state, self.reason, self.since = REBUILDING, reason, time.time()
            self._due = self._clock()

    def pending(self, path: str) -> None:
        """A saved file that is on disk but not in the index yet (the repair indexes it)."""
        with self._lock:
            self._pending.add(path)

    def wait_s(self) -> float | None:
        """Seconds until the repair is due (0: now); None while healthy."""
        with self._lock:
            if self._due is None:
                return None
            return max(0.0, self._due - self._clock())

    def recovered(self) -> None:
        with self._lock:
            self.state, self.reason, self.since = OK, None, None
            self.failures, self.repair_failures, self._due = 0, 0, None
            self._pending.clear()
            self.recovered_at = time.time()

    def to_json(self) -> IndexHealth:
        """``status``'s ``index`` object."""
        with self._lock:
            due = self.wait_s()
            return {
                "state": self.state,
                "reason": self.reason,
                "since": None if self.since is None else iso_utc(self.since),
                "failed_writes": self.failures,
                "retry_in_s": None if due is None else round(due, 1),
                "pending_saves": sorted(self._pending),
                "recovered_at": None if self.recovered_at is None else iso_utc(self.recovered_at),
            }


def _backoff(failures: int, cap: float) -> float:
    return min(cap, FIRST_BACKOFF_S * 2.0 ** min(failures - 1, 10))


def trouble(exc: BaseException, store: IndexStore, writer: Writer) -> tuple[str, bool] | None:
    """``(why, rebuilding)`` for a request's read over ``store`` failing with ``exc``, or None
    when ``exc`` is not the storage's; damage found is reported to the writer here."""
    found = recovery.trouble(exc)
    lost = recovery.replaced(store)
    if lost is not None:
        return f"{lost}; it is being rebuilt from the files", True
    if found is not None and found[0] == recovery.DAMAGED:
        writer.report_damage(store, found[1])
        return f"the index is damaged ({found[1]}); it is being rebuilt from the files", True
    why = found[1] if found else str(exc)
    if writer.health.state == REBUILDING or writer.store is not store:
        return why, True
    if found is not None or isinstance(exc, StoreError):
        return why, False
    return None


def guard(handlers: dict[str, Handler], life: Lifecycle, writer: Writer) -> dict[str, Handler]:
    """``handlers`` as the daemon answers them: all but the ``before_ready`` methods held until
    the first index is complete (an error if the daemon stops first, never a partial index);
    storage trouble answered with ``index_unavailable``, never ``internal``; while the index is
    rebuilt they wait a little first (``status`` never waits)."""

    def guarded(name: str, handler: Handler) -> Handler:
        held = not METHODS[name].before_ready

        # dict[str, Any]: a request's params as decoded, unchecked (ipc.server.Handler).
        def answer(params: dict[str, Any]) -> Any:
            if held:
                life.ready.wait()
                if not life.is_ready:
                    raise InternalError("memoryd stopped before its first index was complete")
            health = writer.health
            deadline = time.monotonic() + REBUILD_WAIT_S
            while name != "status" and health.state == REBUILDING:
                if time.monotonic() >= deadline:
                    why = f"the index is being rebuilt after damage ({health.reason})"
                    raise IndexUnavailable(f"{why}; retry in a few seconds", {"retry": True})
                time.sleep(0.05)
            store = writer.store  # read per request: a rebuild replaces it
            try:
                return handler(params)
            except (sqlite3.Error, StoreError) as exc:
                found = trouble(exc, store, writer)
                if found is None:
                    raise
                why = f"{found[0]}; retry in a few seconds"
                raise IndexUnavailable(why, {"retry": True}) from None

        return answer

    return {name: guarded(name, handler) for name, handler in handlers.items()}
