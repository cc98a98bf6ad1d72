"""The daemon's memory-rot checks: a ``staleness`` job of the scheduler, never inside a request.

A pass runs about a second after the writer's generation moves, after the hook
reports a new ``cwd``, and every :data:`RECHECK_S` seconds (new commits); only
its verdicts go through the writer. ``check`` shares this checker and its caches.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from typing import TYPE_CHECKING, Any

import structlog
from apscheduler.triggers.interval import IntervalTrigger

from memoryd.daemon.lifecycle import Job
from memoryd.errors import StoreError
from memoryd.staleness.checks import Checker, Write, citing_dirs

if TYPE_CHECKING:
    from memoryd.config import Config
    from memoryd.daemon.index import Readers
    from memoryd.daemon.roots import WatchedRoots
    from memoryd.daemon.writer import Writer

TICK_S = 1.0
RECHECK_S = 60.0

log = structlog.get_logger("memoryd.staleness")


class Staleness:
    """The checker, its job, and what the other handlers ask of it."""

    def __init__(
        self, cfg: Config, roots: WatchedRoots, writer: Writer, readers: Readers, *, write: Write
    ) -> None:
        self._roots = roots
        self._writer = writer
        self._readers = readers
        self.checker = Checker(cfg.checkouts)
        self.write = write
        self._poked = threading.Event()
        self._seen, self._last = -1, 0.0  # the generation and the time of the last pass

    def jobs(self) -> list[Job]:
        return [Job("staleness", self.tick, IntervalTrigger(seconds=TICK_S))]

    def reconfigure(self, cfg: Config) -> None:
        """SIGHUP: new ``checkouts:`` take effect at the next tick."""
        self.checker.configure(cfg.checkouts)
        self._poked.set()

    def note_cwd(self, raw_dir: Any, cwd: str) -> None:
        """Remember the hook's ``cwd``; a new one makes the next tick re-resolve and check."""
        if self.checker.note_cwd(self._roots.resolve(raw_dir), cwd, self.write):
            self._poked.set()

    def tick(self) -> None:
        """A pass, when the index changed since the last, it was asked for, or it is due."""
        generation = self._writer.store.generation
        due = self._poked.is_set() or time.monotonic() - self._last >= RECHECK_S
        if generation == self._seen and not due:
            return
        self._poked.clear()
        self._seen, self._last = generation, time.monotonic()
        try:
            conn = self._readers.conn()
            for root in self._roots.paths():
                self.checker.resolve(conn, root)
                for directory in citing_dirs(conn, root):
                    self.checker.check_dir(conn, directory, self.write, details=False)
        except (OSError, sqlite3.Error, StoreError) as exc:
            log.warning("staleness.pass_failed", error=str(exc))  # no descriptor, a lock
        except Exception:  # a bug here must not end the checks for good
            log.exception("staleness.pass_failed")
