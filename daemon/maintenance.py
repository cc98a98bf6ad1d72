"""The daemon's upkeep of its index: full reconciles, recrawls, the writer's repair, its jobs.

A full reconcile is a hint's per-path decision over a stat walk of every root,
on the writer thread; a *recrawl* is the same for one root whose events were
lost or whose folder was replaced.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import structlog
from apscheduler.triggers.interval import IntervalTrigger

from memoryd.config import Config
from memoryd.daemon import runtime
from memoryd.daemon.index import RunRows
from memoryd.daemon.lifecycle import IndexProgress, Job
from memoryd.daemon.roots import RootSet, WatchedRoots
from memoryd.daemon.watcher import Watcher
from memoryd.daemon.writer import Writer
from memoryd.indexer import queries, recovery
from memoryd.indexer.scanner import Listing, is_memory_filename, walk_dirs
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import SyncResult
from memoryd.replies import FeatureStatus, ReconcileFailure
from memoryd.sessions.writes import is_temp_name, remove_stale_temps

log = structlog.get_logger("memoryd.daemon")

OBSERVER_CHECK_S = 1.0
_ERROR_KEPT = 300  # characters of a failed reconcile's error in status


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

    JUMP_S = 60.0  # a smaller step back is NTP slewing

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
    """Full reconciles, recrawls, the periodic jobs, and what ``status`` shows of them."""

    def __init__(
        self,
        cfg: Config,
        roots: WatchedRoots,
        watcher: Watcher,
        writer: Writer,
        *,
        stop: threading.Event,
    ) -> None:
        self._roots = roots
        self._watcher = watcher
        self._writer = writer
        self._stop = stop
        self._interval = cfg.reconcile_interval
        self._reports_dir = str(cfg.reports_dir)
        self.last_reconcile: ReconcileInfo | None = None
        self.last_failure: ReconcileFailure | None = None
        self.drift_fixed_total = 0
        self.watcher_deaths: dict[str, tuple[int, float]] = {}  # root -> (count, last at)
        self.indexing: IndexProgress | None = None  # the first index's progress
        self.recrawls: dict[str, Recrawls] = {}

    def jobs(self) -> list[Job]:
        every = IntervalTrigger
        jobs = [
            Job(
                "reconcile",
                partial(self.reconcile_quietly, "scheduled"),
                every(seconds=self._interval),
            ),
            Job("observers", self.check_observers, every(seconds=OBSERVER_CHECK_S)),
        ]
        ping = runtime.watchdog_interval()
        if ping:
            jobs.append(Job("watchdog", partial(runtime.notify, "WATCHDOG=1"), every(seconds=ping)))
        return jobs

    def reconfigure(self, cfg: Config) -> None:
        self._interval = cfg.reconcile_interval

    def reconcile(self, reason: str) -> SyncResult:
        """Full stat scan of every root through the writer (idle request roots forgotten
        first; dead watches restarted); counts drift."""
        self._roots.forget_idle()
        watcher = self._watcher
        for root in watcher.dead_roots():
            log.warning("watcher.observer_died", root=root)
            mode = watcher.restart(root)  # None: unwatched meanwhile
            if mode not in (None, "missing"):  # a deleted root's watch ends, not dies
                count = self.watcher_deaths.get(root, (0, 0.0))[0]
                self.watcher_deaths[root] = (count + 1, time.time())
            reason = "observer-error"
        for root in watcher.returned_roots():  # a deleted root has come back
            log.info("watcher.root_returned", root=root)
            watcher.restart(root)
        roots = self._roots.paths()
        stop = self._stop.is_set

        def job(store: IndexStore) -> SyncResult:
            if reason != "startup":
                return self._roots.syncer(store, should_stop=stop).sync_trees(roots)
            listed = self._first_walk(roots)
            total = sum(len(entries) for tree in listed.values() for _, entries in tree)
            progress = self.indexing = IndexProgress(total)
            syncer = self._roots.syncer(store, progress=progress, should_stop=stop)
            result = syncer.sync_trees(roots, listed)
            if not result.stopped:
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
        # Recreated while this pass ran: watch them now (unless unwatched meanwhile).
        back = [root for root in watcher.returned_roots() if watcher.restart(root) is not None]
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

    def _first_walk(self, roots: list[str]) -> dict[str, Listing]:
        """Each root's memory files, walked once for the start-up's total and its scan;
        temp files that killed writers left there (and in the reports) go on the way."""
        listed: dict[str, Listing] = {}
        temps: list[str] = []
        for root in roots:
            tree = listed[root] = []
            kept = walk_dirs(root, keep=lambda n: is_memory_filename(n) or is_temp_name(n))
            for directory, entries in kept:
                if self._stop.is_set():
                    break
                temps += [e.path for e in entries if is_temp_name(e.name)]
                tree.append((directory, [e for e in entries if not is_temp_name(e.name)]))
        reports = walk_dirs(self._reports_dir, keep=is_temp_name)
        removed = remove_stale_temps([*temps, *(e.path for _, found in reports for e in found)])
        if removed:
            log.info("daemon.temp_files_removed", count=removed)
        return listed

    def reconcile_quietly(self, reason: str) -> SyncResult | None:
        """:meth:`reconcile` for the scheduler and start-up, which go on whatever it meets (a
        storage failure is the writer's to repair); None: the pass did not complete."""
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
        return {} if self.last_failure is None else {"last_reconcile_error": self.last_failure}

    def recrawl(self, root: str, reason: str) -> None:
        """Rescan ``root`` through the writer, without waiting (a hint: skipped while degraded)."""
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
        """Every second: a dead observer or a returned root reconciles; a root with events
        lost is recrawled, and so is a replaced one once watched afresh."""
        watcher = self._watcher
        if watcher.dead_roots():
            self.reconcile_quietly("observer-error")
        elif watcher.returned_roots():
            self.reconcile_quietly("root-returned")
        for root in watcher.lost_roots():
            self.recrawl(root, "events-lost")
        for root in watcher.replaced_roots():
            if watcher.restart(root) is not None:  # not unwatched meanwhile
                self.recrawl(root, "root-replaced")


def repairer(root_set: RootSet, runs: RunRows) -> Callable[[IndexStore], None]:
    """The writer's catch-up after failed writes: stored roots, every root, held telemetry."""

    def repair(store: IndexStore) -> None:
        for root in root_set.paths():
            entry = root_set.get(root)
            if entry is not None and entry.stored is not None:
                store.save_root(entry.path, entry.stored, entry.last_used)
        result = root_set.syncer(store).sync_trees(root_set.paths())
        runs.write(store, [])  # the rows held back
        log.info("daemon.repaired", drift=result.changed, seconds=round(result.seconds, 3))

    return repair
