"""The daemon's upkeep of its index: full reconciles, the writer's repair, the periodic jobs.

A full reconcile is the same per-path decision as a watcher hint over a
stat walk of every root, run on the writer thread (never on the main thread,
which handles signals); it repairs whatever events were lost. A *recrawl* is
the same for one root, at once, when the watcher knows events were lost there
(the kernel's queue overflowed) or its folder was replaced; ``status`` counts
them per root. The scheduler runs a full reconcile every
``reconcile_interval``, an observer check every second, and the systemd
watchdog ping; :class:`WallClock` notices the clock being
set back, after which every job is rescheduled from now.
:meth:`Maintenance.repair` is what the writer runs after failed writes
(daemon/health.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import structlog
from apscheduler.schedulers.base import BaseScheduler

from memoryd.config import Config
from memoryd.daemon import startup, systemd
from memoryd.daemon.watched_roots import WatchedRoots
from memoryd.daemon.watcher import Watcher
from memoryd.daemon.writer import Writer
from memoryd.indexer import queries, recovery
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import SyncResult
from memoryd.replies import FeatureStatus, ReconcileFailure

log = structlog.get_logger("memoryd.daemon")

OBSERVER_CHECK_S = 1.0
"""How often the daemon checks that every root's observer thread is alive (and that a
deleted root has come back): a loop over the roots, cheap enough to run every second."""

_ERROR_KEPT = 300
"""How much of a failed reconcile's error ``status`` shows."""


@dataclass
class ReconcileInfo:
    at: float
    seconds: float
    drift: int
    reason: str


@dataclass
class Recrawls:
    """One root's rescans since start: how many, and the last one (``drift`` once it ran)."""

    count: int
    last: ReconcileInfo


class WallClock:
    """Notices the wall clock being set back, against the monotonic clock."""

    JUMP_S = 60.0
    """A step back smaller than this is NTP slewing, not a reset."""

    def __init__(
        self,
        wall: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._wall, self._monotonic = wall, monotonic
        self._offset = wall() - monotonic()

    def went_back(self) -> bool:
        offset = self._wall() - self._monotonic()
        back = offset < self._offset - self.JUMP_S
        self._offset = offset
        return back


class Maintenance:
    """Full reconciles, the writer's repair, the periodic jobs, and what ``status`` shows of them.

    ``after_repair`` runs on the writer thread once a repair has reconciled
    (telemetry rows held back while the index could not be written);
    ``rescheduled`` are the other parts' jobs to work out again after the
    clock was set back.
    """

    def __init__(
        self,
        cfg: Config,
        roots: WatchedRoots,
        watcher: Watcher,
        writer: Writer,
        *,
        scheduler: BaseScheduler,
        stop: threading.Event,
        after_repair: Callable[[IndexStore], None],
        rescheduled: Callable[[], None],
    ) -> None:
        self._roots = roots
        self._watcher = watcher
        self._writer = writer
        self._scheduler = scheduler
        self._stop = stop
        self._after_repair = after_repair
        self._rescheduled = rescheduled
        self._interval = cfg.reconcile_interval
        self.last_reconcile: ReconcileInfo | None = None
        self.last_failure: ReconcileFailure | None = None
        """The last full reconcile that raised (shown in ``status`` from then on)."""
        self.drift_fixed_total = 0
        self.watcher_deaths: dict[str, tuple[int, float]] = {}
        """Root -> how many times its watcher died, and when it last did (``status``'s alarms)."""
        self.indexing: startup.IndexProgress | None = None
        """The first index's progress, once it has started."""
        self.recrawls: dict[str, Recrawls] = {}
        """Root -> its recrawls (events lost, folder replaced)."""

    def add_jobs(self) -> None:
        """The periodic jobs, each from a fresh trigger (so: from now)."""
        self._scheduler.add_job(
            self.reconcile_quietly,
            "interval",
            seconds=self._interval,
            args=["scheduled"],
            id="reconcile",
            replace_existing=True,
        )
        # A dead observer thread means events are being lost: recrawl soon,
        # not at the next scheduled reconcile.
        self._scheduler.add_job(
            self.check_observers,
            "interval",
            seconds=OBSERVER_CHECK_S,
            id="observers",
            replace_existing=True,
        )
        interval = systemd.watchdog_interval()
        if interval:
            self._scheduler.add_job(
                lambda: systemd.notify("WATCHDOG=1"),
                "interval",
                seconds=interval,
                id="watchdog",
                replace_existing=True,
            )

    def reconfigure(self, cfg: Config) -> None:
        """SIGHUP: a new ``reconcile_interval`` counts from now."""
        self._interval = cfg.reconcile_interval
        if self._scheduler.get_job("reconcile") is not None:
            self._scheduler.reschedule_job("reconcile", trigger="interval", seconds=self._interval)

    def clock_set_back(self) -> None:
        """The wall clock went back: every job's next run is worked out again from now.

        apscheduler keeps the next run time it computed in wall-clock terms; set
        the clock back a day and the report, the reconcile and systemd's
        watchdog ping would all wait that day out (the last one gets the unit
        killed).
        """
        log.warning("daemon.clock_set_back")
        self.add_jobs()
        self._rescheduled()

    def reconcile(self, reason: str) -> SyncResult:
        """Full stat scan of every root through the writer; counts drift.

        Request roots idle for longer than ``request_root_idle_days`` are
        forgotten first.
        """
        self._roots.forget_idle()
        watcher = self._watcher
        for root in watcher.dead_roots():
            log.warning("watcher.observer_died", root=root)
            if watcher.restart(root) != "missing":  # a deleted root's watch ends, not dies
                count = self.watcher_deaths.get(root, (0, 0.0))[0]
                self.watcher_deaths[root] = (count + 1, time.time())
            reason = "observer-error"
        for root in watcher.returned_roots():  # a deleted root has come back
            log.info("watcher.root_returned", root=root)
            watcher.restart(root)
        roots = self._roots.paths()
        stop = self._stop.is_set

        def job(store: IndexStore) -> SyncResult:
            # The walks run here, on the writer thread, never on the main thread,
            # which must stay free for signals (SIGTERM, SIGHUP reloads).
            progress = None
            if reason == "startup":
                progress = self.indexing = startup.IndexProgress(startup.count_files(roots))
            syncer = self._roots.syncer(store, progress=progress, should_stop=stop)
            result = syncer.sync_trees(roots)
            if progress is not None and not result.stopped:
                progress.finish()
            return result

        try:
            result = self._writer.call(job)
        except Exception as exc:
            self.last_failure = {
                "at": queries.iso_utc(time.time()),
                "reason": reason,
                "error": " ".join(f"{type(exc).__name__}: {exc}".split())[:_ERROR_KEPT],
            }
            raise
        back = watcher.returned_roots()  # recreated while this pass ran: watch them now
        for root in back:
            watcher.restart(root)
        if back:
            self._writer.call(lambda store: self._roots.syncer(store).sync_trees(back))
        self.last_reconcile = ReconcileInfo(time.time(), result.seconds, result.changed, reason)
        if reason != "startup":
            self.drift_fixed_total += result.changed
        log.info(
            "daemon.reconciled",
            reason=reason,
            drift=result.changed,
            seconds=round(result.seconds, 3),
            files=result.unchanged + result.added + result.updated,
            stopped=result.stopped,
        )
        return result

    def reconcile_quietly(self, reason: str) -> SyncResult | None:
        """:meth:`reconcile` for the scheduler and start-up, which must go on whatever it meets.

        A storage failure leaves the writer degraded, and it repairs on its
        own; anything else is logged with its traceback and shown in
        ``status`` (:meth:`status`), and the next reconcile tries again. A
        start-up must not exit over it: under systemd that is a restart loop.
        None says the pass did not complete.
        """
        try:
            return self.reconcile(reason)
        except Exception as exc:
            found = recovery.trouble(exc)
            if found is None:
                log.exception("daemon.reconcile_failed", reason=reason)
            else:
                log.warning("daemon.reconcile_deferred", reason=reason, cause=found[1])
            return None

    def status(self) -> FeatureStatus:
        """``last_reconcile_error`` once a full reconcile has failed (compare its ``at``)."""
        return {} if self.last_failure is None else {"last_reconcile_error": self.last_failure}

    def repair(self, store: IndexStore) -> None:
        """The writer's catch-up after failed writes (run on its thread): what they missed.

        The remembered roots are written again (a save may have added one),
        then every root is reconciled, which writes only what differs from
        the disk; ``after_repair`` (telemetry rows held back) follows.
        """
        self._roots.save_persisted(store)
        result = self._roots.syncer(store).sync_trees(self._roots.paths())
        self._after_repair(store)
        log.info("daemon.repaired", drift=result.changed, seconds=round(result.seconds, 3))

    def recrawl(self, root: str, reason: str) -> None:
        """Rescan ``root`` through the writer now, without waiting (watchman's recrawl).

        Called from the observer's thread when the kernel dropped events
        (``events-lost``) and from the observer check when the root's folder
        was replaced (``root-replaced``). Like a watcher hint, it is skipped
        while the index cannot be written: the repair then rescans every root.
        """
        log.warning("watcher.recrawl", root=root, reason=reason)
        info = ReconcileInfo(time.time(), 0.0, 0, reason)
        previous = self.recrawls.get(root)
        self.recrawls[root] = Recrawls((previous.count if previous else 0) + 1, info)

        def job(store: IndexStore) -> None:
            if self._roots.get(root) is None:  # forgotten meanwhile: its rows are gone
                return
            result = self._roots.syncer(store).sync_tree(root)
            info.seconds, info.drift = result.seconds, result.changed
            self.drift_fixed_total += result.changed
            log.info(
                "daemon.recrawled",
                root=root,
                reason=reason,
                drift=result.changed,
                seconds=round(result.seconds, 3),
            )

        self._writer.submit(job, hint=True)

    def check_observers(self) -> None:
        """Every second: a dead observer, or a deleted root that exists again, recrawls.

        So does a root whose path names another folder than the one watched
        (moved away, or deleted and made again): it is watched afresh (or
        marked ``missing``) and rescanned.
        """
        watcher = self._watcher
        if watcher.dead_roots():
            self.reconcile_quietly("observer-error")
        elif watcher.returned_roots():
            self.reconcile_quietly("root-returned")
        for root in watcher.replaced_roots():
            if self._roots.get(root) is not None:  # not forgotten meanwhile
                watcher.restart(root)
                self.recrawl(root, "root-replaced")
