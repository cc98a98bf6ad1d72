"""The first index: its progress, the methods held until it is complete, the preloads.

``status`` answers from the start (the files done, the total and the rate
under ``indexing``, logged at most once a second); every other method waits
until the index is complete, so no answer is computed from a half-built
index. A heavy module the first request would import (a judge's SDK) is
imported on a thread of its own meanwhile, and the daemon is ready only once
it is loaded: that cost belongs to the start-up, not to the first ``select``.
"""

from __future__ import annotations

import importlib
import threading
import time
from collections.abc import Callable
from typing import Any

import structlog

from memoryd.daemon.lifecycle import Lifecycle
from memoryd.errors import InternalError
from memoryd.ipc.server import Handler
from memoryd.methods import METHODS
from memoryd.replies import IndexingProgress

log = structlog.get_logger("memoryd.daemon")

LOG_EVERY_S = 1.0


class IndexProgress:
    """Files reconciled out of a total; logs ``index.progress`` at most once a second."""

    def __init__(
        self,
        total: int,
        *,
        every: float = LOG_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
        emit: Callable[..., Any] | None = None,
    ) -> None:
        self.emit = emit or log.info
        self.total = total
        self.done = 0
        self.every = every
        self.clock = clock
        self.started = clock()
        self.finished: float | None = None
        self._logged: float | None = None

    def advance(self) -> None:
        self.done += 1
        now = self.clock()
        if self._logged is None or now - self._logged >= self.every:
            self._logged = now
            self.emit("index.progress", **self.to_json())

    def finish(self) -> None:
        self.finished = self.clock()
        self.emit("index.progress", **self.to_json())

    def to_json(self) -> IndexingProgress:
        elapsed = (self.finished or self.clock()) - self.started
        return {
            "phase": "indexing" if self.finished is None else "done",
            "done": self.done,
            "total": self.total,
            "seconds": round(elapsed, 3),
            "rate_per_s": round(self.done / elapsed) if elapsed > 0 else None,
        }


def preload(module: str) -> threading.Thread:
    """Import ``module`` on a thread of its own; a failure is logged and left to the user."""

    def load() -> None:
        started = time.monotonic()
        try:
            importlib.import_module(module)
        except Exception as exc:  # the request that needs it reports the failure
            log.warning("daemon.preload_failed", module=module, error=str(exc))
            return
        log.info("daemon.preloaded", module=module, seconds=round(time.monotonic() - started, 3))

    thread = threading.Thread(target=load, name=f"preload-{module}", daemon=True)
    thread.start()
    return thread


def wait_for(threads: list[threading.Thread], stop: threading.Event) -> None:
    """Join ``threads``, giving up as soon as ``stop`` is set (a SIGTERM during start-up)."""
    for thread in threads:
        while thread.is_alive() and not stop.is_set():
            thread.join(0.1)


def gate(handlers: dict[str, Handler], life: Lifecycle) -> dict[str, Handler]:
    """``handlers`` with every method but the ``before_ready`` ones held until ``life.ready``.

    ``ready`` is also set when the daemon stops during start-up; the held
    requests then get an error instead of an answer from a partial index.
    """

    def held(handler: Handler) -> Handler:
        # dict[str, Any]: a request's params as decoded, unchecked (ipc.server.Handler).
        def wait_then_answer(params: dict[str, Any]) -> Any:
            life.ready.wait()
            if not life.is_ready:
                raise InternalError("memoryd stopped before its first index was complete")
            return handler(params)

        return wait_then_answer

    return {name: h if METHODS[name].before_ready else held(h) for name, h in handlers.items()}
