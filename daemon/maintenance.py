"""The daemon's upkeep of its index: full reconciles, the writer's repair, the periodic jobs.

A full reconcile is the same per-path decision as a watcher hint over a
stat walk of every root, run on the writer thread (never on the main thread,
which handles signals); it repairs whatever events were lost. The scheduler
runs one every ``reconcile_interval``, an observer check every few seconds,
and the systemd watchdog ping; :class:`WallClock` notices the clock being
set back, after which every job is rescheduled from now. :func:`repair` is
what the writer runs after failed writes (daemon/health.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import structlog

from memoryd.daemon import startup, systemd
from memoryd.daemon.roots import PERSISTED
from memoryd.indexer import recovery
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import SyncResult

if TYPE_CHECKING:
    from memoryd.daemon.app import Daemon

log = structlog.get_logger("memoryd.daemon")

OBSERVER_CHECK_S = 1.0
"""How often the daemon checks that every root's observer thread is alive (and that a
deleted root has come back): a loop over the roots, microseconds at a hundred."""


@dataclass
class ReconcileInfo:
    at: float
    seconds: float
    drift: int
    reason: str


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


def add_jobs(daemon: Daemon) -> None:
    """The daemon's periodic jobs, each from a fresh trigger (so: from now)."""
    daemon.scheduler.add_job(
        lambda reason: reconcile_quietly(daemon, reason),
        "interval",
        seconds=daemon.cfg.reconcile_interval,
        args=["scheduled"],
        id="reconcile",
        replace_existing=True,
    )
    # A dead observer thread means events are being lost: recrawl soon,
    # not at the next scheduled reconcile.
    daemon.scheduler.add_job(
        lambda: check_observers(daemon),
        "interval",
        seconds=OBSERVER_CHECK_S,
        id="observers",
        replace_existing=True,
    )
    interval = systemd.watchdog_interval()
    if interval:
        daemon.scheduler.add_job(
            lambda: systemd.notify("WATCHDOG=1"),
            "interval",
            seconds=interval,
            id="watchdog",
            replace_existing=True,
        )


def clock_set_back(daemon: Daemon) -> None:
    """The wall clock went back: every job's next run is worked out again from now.

    apscheduler keeps the next run time it computed in wall-clock terms; set
    the clock back a day and the report, the reconcile and systemd's
    watchdog ping would all wait that day out (the last one gets the unit
    killed).
    """
    log.warning("daemon.clock_set_back")
    add_jobs(daemon)
    for hook in daemon.on_clock_back:
        hook()


def reconcile(daemon: Daemon, reason: str) -> SyncResult:
    """Full stat scan of every root through the writer; counts drift.

    Request roots idle for longer than ``request_root_idle_days`` are
    forgotten first.
    """
    daemon.forget_idle()
    for root in daemon.watcher.dead_roots():
        log.warning("watcher.observer_died", root=root)
        daemon.watcher.restart(root)
        reason = "observer-error"
    for root in daemon.watcher.returned_roots():  # a deleted root has come back
        log.info("watcher.root_returned", root=root)
        daemon.watcher.restart(root)
    roots = daemon.roots
    stop = daemon.stop_requested.is_set

    def job(store: IndexStore) -> SyncResult:
        # The walks run here, on the writer thread, never on the main thread,
        # which must stay free for signals (SIGTERM, SIGHUP reloads).
        progress = None
        if reason == "startup":
            progress = daemon.indexing = startup.IndexProgress(startup.count_files(roots))
        result = daemon.syncer(store, progress=progress, should_stop=stop).sync_trees(roots)
        if progress is not None and not result.stopped:
            progress.finish()
        return result

    result = daemon.writer.call(job)
    back = daemon.watcher.returned_roots()  # recreated while this pass ran: watch them now
    for root in back:
        daemon.watcher.restart(root)
    if back:
        daemon.writer.call(lambda store: daemon.syncer(store).sync_trees(back))
    info = ReconcileInfo(time.time(), result.seconds, result.changed, reason)
    daemon.last_reconcile = info
    if reason != "startup":
        daemon.drift_fixed_total += result.changed
    log.info(
        "daemon.reconciled",
        reason=reason,
        drift=result.changed,
        seconds=round(result.seconds, 3),
        files=result.unchanged + result.added + result.updated,
        stopped=result.stopped,
    )
    return result


def reconcile_quietly(daemon: Daemon, reason: str) -> SyncResult | None:
    """:func:`reconcile` for the scheduler and start-up: a storage failure is not a bug.

    The writer is then degraded and repairs on its own; None says so.
    """
    try:
        return reconcile(daemon, reason)
    except Exception as exc:
        found = recovery.trouble(exc)
        if found is None:
            raise
        log.warning("daemon.reconcile_deferred", reason=reason, cause=found[1])
        return None


def repair(daemon: Daemon, store: IndexStore) -> None:
    """The writer's catch-up after failed writes (run on its thread): what they missed.

    The remembered roots are written again (a save may have added one),
    then every root is reconciled, which writes only what differs from
    the disk; the ``on_repair`` hooks (telemetry rows held back) follow.
    """
    for root in daemon.root_set.paths():
        entry = daemon.root_set.get(root)
        if entry is not None and entry.origin in PERSISTED:
            store.save_root(entry.path, entry.origin, entry.last_used)
    result = daemon.syncer(store).sync_trees(daemon.roots)
    for hook in daemon.on_repair:
        hook(store)
    log.info("daemon.repaired", drift=result.changed, seconds=round(result.seconds, 3))


def check_observers(daemon: Daemon) -> None:
    """Every few seconds: a dead observer, or a deleted root that exists again, recrawls."""
    if daemon.watcher.dead_roots():
        reconcile_quietly(daemon, "observer-error")
    elif daemon.watcher.returned_roots():
        reconcile_quietly(daemon, "root-returned")
