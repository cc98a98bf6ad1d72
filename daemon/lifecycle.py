"""Where the daemon is in its life, and how a part asks it to stop.

The parts the daemon is composed of (daemon/compose.py) are handed this
instead of the daemon: the staleness thread and a full reconcile watch
``stop_requested``, the writer and the server call :meth:`Lifecycle.fail`
when they die, ``status`` reports the state, and requests that arrive
during the first index wait on ``ready``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Literal

import structlog

log = structlog.get_logger("memoryd.daemon")

DaemonState = Literal["starting", "ready", "stopping"]

FATAL_EXIT = 70
"""Exit status after a fatal internal failure (EX_SOFTWARE): systemd restarts the unit."""


@dataclass(frozen=True)
class Reload:
    """The last SIGHUP: when, and why its config was refused (None: applied)."""

    at: float
    refused: str | None


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
    def exit_code(self) -> int:
        return 0 if self.fatal is None else FATAL_EXIT
