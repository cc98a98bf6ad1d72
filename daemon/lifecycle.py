"""Where the daemon is in its life and on disk, how a part asks it to stop, its periodic jobs.

The daemon's parts are handed a :class:`Lifecycle` and a :class:`Where`
instead of the daemon; a part with periodic work describes it as
:class:`Job` values, which the daemon installs.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from socket import socket as Listener
from typing import Literal

import structlog
from apscheduler.triggers.base import BaseTrigger

log = structlog.get_logger("memoryd.daemon")

DaemonState = Literal["starting", "ready", "stopping"]

FATAL_EXIT = 70
"""Exit status after a fatal internal failure (EX_SOFTWARE): systemd restarts the unit."""


@dataclass(frozen=True)
class Reload:
    """The last SIGHUP: when, and why its config was refused (None: applied)."""

    at: float
    refused: str | None


@dataclass(frozen=True)
class Where:
    """Where this daemon can be found, and how to stop being findable."""

    socket: str
    activated: bool
    """The listening socket came from systemd (socket activation), not from our bind."""
    db: str
    release: Callable[[], None]
    """Remove the socket file and the pidfile (``shutdown`` does so before it replies)."""
    rebind: Callable[[], Listener | None] = lambda: None
    """A new listening socket when ours can no longer be reached (its file deleted), else None."""


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
        """Why the daemon is stopping on its own (it then exits :data:`FATAL_EXIT`)."""
        self.last_reload: Reload | None = None

    def fail(self, reason: str) -> None:
        """A part the daemon cannot run without has died: stop, and exit non-zero.

        A process that stays up without answering looks alive to systemd; one
        that exits with an error is restarted (``Restart=on-failure``).
        """
        if self.fatal is None:
            self.fatal = reason
            log.critical("daemon.fatal", reason=reason)
        self.stop_requested.set()

    @property
    def is_ready(self) -> bool:
        """The first index is complete and the daemon is not stopping."""
        return self.state == "ready"

    @property
    def exit_code(self) -> int:
        return 0 if self.fatal is None else FATAL_EXIT
