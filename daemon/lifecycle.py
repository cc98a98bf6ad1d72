"""The daemon's life as its parts see it: state, stop request, location, periodic jobs, first index.

Parts are handed a :class:`Lifecycle` and a :class:`Where`, never the daemon; a
part with periodic work describes it as :class:`Job` values. Until the first
index is complete only the ``before_ready`` methods answer.
"""

from __future__ import annotations

import importlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from socket import socket as Listener
from typing import Any, Literal

import structlog
from apscheduler.triggers.base import BaseTrigger

from memoryd.replies import IndexingProgress, LastReload

log = structlog.get_logger("memoryd.daemon")

DaemonState = Literal["starting", "ready", "stopping"]

FATAL_EXIT = 70
"""Exit status after a fatal internal failure (EX_SOFTWARE): systemd restarts the unit."""
LOG_EVERY_S = 1.0


@dataclass(frozen=True)
class Where:
    """Where this daemon is found: ``release`` removes the socket file and pidfile, ``rebind``
    gives a new listening socket when ours can no longer be reached (else None)."""

    socket: str
    activated: bool
    db: str
    release: Callable[[], None]
    rebind: Callable[[], Listener | None] = lambda: None


@dataclass(frozen=True)
class Job:
    """A periodic job of a part: its id, what it runs, and a fresh trigger (counting from now)."""

    id: str
    run: Callable[[], object]
    trigger: BaseTrigger


class Lifecycle:
    """The daemon's state, its stop request, and why it failed (if it did)."""

    def __init__(self) -> None:
        self.started = time.time()
        self.state: DaemonState = "starting"
        self.stop_requested = threading.Event()
        self.ready = threading.Event()
        """Set once the first index is complete, or the daemon stops before that."""
        self.fatal: str | None = None
        self.last_reload: LastReload | None = None

    def fail(self, reason: str) -> None:
        """A part the daemon cannot run without died: stop and exit :data:`FATAL_EXIT`, so
        systemd restarts it (a process up without answering looks alive)."""
        if self.fatal is None:
            self.fatal = reason
            log.critical("daemon.fatal", reason=reason)
        self.stop_requested.set()

    @property
    def is_ready(self) -> bool:
        return self.state == "ready"

    @property
    def exit_code(self) -> int:
        return 0 if self.fatal is None else FATAL_EXIT


class IndexProgress:
    """Files reconciled out of a total; logs ``index.progress`` at most once a second."""

    def __init__(
        self,
        total: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        emit: Callable[..., Any] | None = None,
    ) -> None:
        self.emit = emit or log.info
        self.total = total
        self.done = 0
        self.clock = clock
        self.started = clock()
        self.finished: float | None = None
        self._logged: float | None = None

    def advance(self) -> None:
        self.done += 1
        now = self.clock()
        if self._logged is None or now - self._logged >= LOG_EVERY_S:
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
    """Import ``module`` (a judge's SDK) on a thread of its own during the first index;
    a failure is logged and left to the request that needs it."""

    def load() -> None:
        started = time.monotonic()
        try:
            importlib.import_module(module)
        except Exception as exc:
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
