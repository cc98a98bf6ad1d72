"""The daemon's life: claim the socket, index, watch, serve, stop cleanly.

How a file change becomes an answer: watchdog reports a path → the
:class:`~memoryd.daemon.watcher.Watcher` settles for ~50 ms → the batch is a
job on the single :class:`~memoryd.daemon.writer.Writer` thread, which
re-stats each path and updates the index in one transaction → the next
request, on its own read-only connection, sees the committed rows. A scheduled
full reconcile catches whatever events were lost.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog
from apscheduler.schedulers.background import BackgroundScheduler

from memoryd import config as config_mod
from memoryd import requests, system_trees
from memoryd.config import Config
from memoryd.daemon import health, maintenance, query_handlers, runtime, startup, systemd
from memoryd.daemon.core import DaemonCore
from memoryd.daemon.handlers import DaemonMethods
from memoryd.daemon.maintenance import ReconcileInfo, WallClock
from memoryd.daemon.readers import Readers
from memoryd.daemon.roots import PERSISTED, Root, RootSet
from memoryd.daemon.watcher import Watcher
from memoryd.daemon.writer import Writer
from memoryd.errors import InvalidParams
from memoryd.indexer import recovery
from memoryd.indexer.folders import holds_memory_files
from memoryd.indexer.recovery import open_or_recover
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer, SyncResult
from memoryd.ipc.server import Handler, Server
from memoryd.paths import escaped, name_problem
from memoryd.select.analysis import TERM_ANALYSIS
from memoryd.sessions.service import remove_stale_temp_files

if TYPE_CHECKING:
    from memoryd.daemon.staleness_handlers import Staleness

log = structlog.get_logger("memoryd.daemon")

CLAUDE_MODULE = "memoryd.select.claude"
"""Imported during start-up when an API key is set (see :func:`startup.preload`)."""

FATAL_EXIT = 70
"""Exit status after a fatal internal failure (EX_SOFTWARE): systemd restarts the unit."""


class Daemon:
    """Owns every long-lived part; ``run()`` blocks until the daemon stops."""

    def __init__(self, cfg: Config, roots: list[tuple[str, str]]) -> None:
        """``roots`` are the permanent (path, origin) pairs declared at start-up."""
        self.cfg = cfg
        self.started = time.time()
        self.state = "starting"
        self.stop_requested = threading.Event()
        self.fatal: str | None = None
        """Why the daemon is stopping on its own (it then exits :data:`FATAL_EXIT`)."""
        self._reload_requested = threading.Event()
        self.ready = threading.Event()
        self.indexing: startup.IndexProgress | None = None
        self.root_set = RootSet()
        self._declared = roots
        self.last_reconcile: ReconcileInfo | None = None
        self.drift_fixed_total = 0
        self.extra_status: dict[str, Any] = {}
        self.pidfile = runtime.PidFile(cfg.pidfile)
        self._socket_inode: int | None = None
        self._activated = False
        self._writer: Writer | None = None
        self.readers = Readers(cfg.db_path)
        self._resolved = requests.ResolvedDirs()
        self.watcher = Watcher(self._on_paths, settle=cfg.settle_ms / 1000)
        self.scheduler = BackgroundScheduler(
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 3600}
        )
        self.handlers: dict[str, Handler] = {}
        # Called with the new Config after SIGHUP, so features can pick up settings.
        self.on_reload: list[Callable[[Config], None]] = []
        # Called once the server has stopped, before the writer closes: last writes to queue.
        self.on_stop: list[Callable[[], None]] = []
        # Run by the writer's repair after failed writes, and after a rebuilt index.
        self.on_repair: list[Callable[[IndexStore], None]] = []
        self.on_rebuilt: list[Callable[[], None]] = []
        # Called after the wall clock was set back, to reschedule jobs from now.
        self.on_clock_back: list[Callable[[], None]] = []
        self._clock = WallClock()
        self.server: Server | None = None
        # Set by the staleness feature (daemon/staleness_handlers.py) when it starts.
        self.staleness: Staleness | None = None

    @property
    def activated(self) -> bool:
        """The listening socket came from systemd (socket activation), not from our bind."""
        return self._activated

    @property
    def writer(self) -> Writer:
        """The index's one writer thread; it exists once :meth:`run` has opened the index."""
        if self._writer is None:
            raise RuntimeError("the index writer is not running yet")
        return self._writer

    # -- start-up -----------------------------------------------------------

    def run(self) -> int:
        # Before the pidfile exists, so a SIGTERM sent as soon as it appears is
        # handled too; from here on SIGTERM stops cleanly, even during the first
        # reconcile (which gives up at the next directory).
        self._install_signals()
        listener = self._claim()
        try:
            store, recovery = open_or_recover(self.cfg.db_path, TERM_ANALYSIS)
            if recovery is not None:
                log.error(
                    "index.recovered_from_damage",
                    reason=recovery.reason,
                    moved_to=str(recovery.moved_to),
                    salvaged=recovery.salvaged,
                )
            self._writer = Writer(
                store,
                on_fatal=self.fail,
                repair=lambda store: maintenance.repair(self, store),
                on_rebuilt=self._index_rebuilt,
            )
            self._restore_roots()
            self.writer.call(lambda _store: self._remove_stale_temp_files())  # a walk
            service, staleness = query_handlers.build_service(self)
            self.handlers = DaemonMethods(DaemonCore(self), service, staleness).table()
            if self.stop_requested.is_set():
                return self.exit_code
            # Building the method table did the main thread's imports: no module is shared.
            preloads = [startup.preload(CLAUDE_MODULE)] if self.cfg.anthropic.api_key else []
            # `status` answers (with progress) during the first reconcile; the
            # other methods wait for it.
            held = startup.gate(self.handlers, self.ready, lambda: self.state == "ready")
            self.server = Server(
                listener,
                health.guard(held, lambda: self.writer),
                allowed_uid=os.getuid(),
                max_connections=self.cfg.max_connections,
                idle_timeout=self.cfg.idle_timeout,
                on_fatal=self.fail,
            )
            self.server.start()
            systemd.notify(f"STATUS=indexing {len(self.roots)} root(s)")
            maintenance.reconcile_quietly(self, "startup")
            startup.wait_for(preloads, self.stop_requested)
            self._schedule()
            if self.stop_requested.is_set():
                return self.exit_code
            self.state = "ready"
            self.ready.set()
            systemd.notify("READY=1", f"STATUS=watching {len(self.roots)} root(s)")
            log.info(
                "daemon.ready",
                socket=str(self.cfg.socket),
                roots=self.roots,
                pid=os.getpid(),
                activated=self._activated,
            )
            while not self.stop_requested.wait(0.5):
                if self._clock.went_back():
                    maintenance.clock_set_back(self)
                if self._reload_requested.is_set():
                    self._reload_requested.clear()
                    self.reload()
        finally:
            if self.server is None:  # stopped before serving: nobody else owns it
                listener.close()
            self._shutdown()
        return self.exit_code

    @property
    def exit_code(self) -> int:
        return 0 if self.fatal is None else FATAL_EXIT

    def fail(self, reason: str) -> None:
        """A part the daemon cannot run without has died: stop, and exit non-zero.

        A process that stays up without answering looks alive to systemd; one
        that exits with an error is restarted (``Restart=on-failure``).
        """
        if self.fatal is None:
            self.fatal = reason
            log.critical("daemon.fatal", reason=reason)
        self.stop_requested.set()

    def _claim(self) -> socket.socket:
        """Pidfile, then socket (activated or bound), in watchman's order."""
        runtime.ensure_private_dir(self.cfg.state_dir, tighten=True)
        self.pidfile.acquire()
        try:
            passed = systemd.listen_fds()
            if passed:
                self._activated = True
                # systemd bound it where the socket unit says, whatever memoryd
                # would have chosen: status and logs name that path.
                bound = passed[0].getsockname()
                if isinstance(bound, str) and bound:
                    self.cfg = replace(self.cfg, socket=Path(bound))
                return passed[0]
            runtime.ensure_private_dir(self.cfg.socket.parent)
            sock, self._socket_inode = runtime.bind_socket(self.cfg.socket)
            return sock
        except BaseException:
            self.pidfile.release()
            raise

    def _schedule(self) -> None:
        maintenance.add_jobs(self)
        self.scheduler.start()

    def _install_signals(self) -> None:
        signal.signal(signal.SIGTERM, lambda *_: self.stop_requested.set())
        signal.signal(signal.SIGINT, lambda *_: self.stop_requested.set())
        # The main loop runs the reload: one at a time, and a burst of signals
        # while one runs becomes one more reload, not overlapping threads.
        signal.signal(signal.SIGHUP, lambda *_: self._reload_requested.set())
        # A file-size limit (RLIMIT_FSIZE) must fail the write (EFBIG, a full disk to
        # the index), not kill the daemon, which is SIGXFSZ's default.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    # -- roots ----------------------------------------------------------------

    @property
    def roots(self) -> list[str]:
        return self.root_set.paths()

    @property
    def idle_seconds(self) -> float:
        return self.cfg.request_root_idle_days * 86400

    def _restore_roots(self) -> None:
        """Declared roots, then the remembered ones that are still wanted (newest first)."""
        for root, origin in self._declared:
            self._add_root(root, origin, wait=False)
        now = time.time()
        rows = self.writer.call(lambda s: s.root_rows())
        for path, origin, last_used in sorted(rows, key=lambda r: -r[2]):
            if origin == "watch" and not os.path.isdir(path):
                log.warning("daemon.root_missing", root=path, origin=origin)
            elif (
                self.root_for(path) is None
                and os.path.isdir(path)
                and not (origin == "request" and now - last_used > self.idle_seconds)
            ):
                self._add_root(path, origin, last_used=last_used, wait=False)
            else:  # idle, gone, or now inside a declared root
                self.forget_root(path, reason="restart")

    def _add_root(
        self,
        root: str,
        origin: str,
        *,
        index: bool = False,
        last_used: float | None = None,
        wait: bool = True,
    ) -> Root | None:
        """Watch ``root`` and record it; ``index`` scans it now (roots added after start-up).

        The watch (inotify walks the tree to set it up), the record and the
        scan run as one job on the writer thread. With ``wait`` the caller
        waits for it (a request about to read the folder); the main thread
        does not (start-up, reload), so it never walks a tree. A write the
        index refuses now (full disk, held lock) leaves the root watched and
        to the writer's repair.
        """
        problem = name_problem(root)
        refused = f"the path {problem}" if problem else system_trees.refusal(root)
        if refused is not None:
            log.warning("daemon.root_refused", root=escaped(root), reason=refused)
            return None
        if not os.path.isdir(root):
            log.warning("daemon.root_missing", root=root)
            return None
        entry = self.root_set.add(root, origin, last_used)
        if entry.origin == "request":
            self._make_room(keep=root)

        def record(store: IndexStore) -> None:
            mode = self.watcher.add_root(root)
            log.info("daemon.watching", root=root, mode=mode, origin=entry.origin)
            if entry.origin in PERSISTED:
                store.save_root(root, entry.origin, entry.last_used)
            if index:
                self.syncer(store).sync_tree(root)

        future = self.writer.submit(record)
        if wait:
            try:
                future.result()
            except Exception as exc:
                if recovery.trouble(exc) is None:
                    raise
                log.warning("daemon.root_index_deferred", root=root, cause=str(exc))
        return entry

    def _make_room(self, keep: str) -> None:
        """Forget the least recently used request roots beyond ``max_request_roots``.

        A folder that only requests named is a cache entry, not a setting: a
        thousand of them must not become a thousand watched trees (threads,
        inotify instances, rows). One that is named again is watched again.
        """
        for root in self.root_set.over_limit("request", self.cfg.max_request_roots, keep):
            self.forget_root(root, reason="over max_request_roots (least recently used)")

    def forget_root(self, root: str, reason: str) -> int:
        """Stop watching ``root`` and drop its rows (those under another root stay)."""
        self.root_set.remove(root)
        self.watcher.remove_root(root)
        keep = self.root_set.paths()
        dropped = self.writer.call(lambda s: s.forget_root(root, keep))
        log.info("daemon.root_forgotten", root=root, reason=reason, files=dropped)
        return dropped

    def forget_idle(self) -> None:
        for root in self.root_set.idle(self.idle_seconds, time.time()):
            self.forget_root(root, reason="idle")

    def root_for(self, directory: str) -> str | None:
        return self.root_set.covering(directory)

    def syncer(self, store: IndexStore, **options: Any) -> Syncer:
        """A :class:`Syncer` that follows symlinked files only within their own root."""
        return Syncer(store, root_of=self.root_for, **options)

    def refuse_too_broad(self, path: str, field: str = "dir") -> None:
        """Raise for a directory no request may watch or save into (system_trees.py).

        Nothing is changed either way; a folder inside a root the user set up is
        never refused.
        """
        if self.root_for(path) is not None:
            return
        reason = system_trees.refusal(path)
        if reason is not None:
            raise InvalidParams(f"'{field}': refusing {path}: {reason}", {"field": field})

    def _watch_new(self, path: str, raw: Any, field: str, origin: str) -> Root | None:
        try:
            return self._add_root(path, origin, index=True)
        except OSError as exc:
            raise InvalidParams(
                f"'{field}': cannot watch {raw}: {exc.strerror or exc}", {"field": field}
            ) from None

    def ensure_dir(self, raw: Any, field: str = "dir") -> str:
        """Validate a directory param; keep it watched while requests use it.

        A folder outside every root becomes a ``request`` root only when it
        holds memory files itself: an empty folder, a typo'd parent or a
        checkout's top level are answered (with a note saying what was found)
        but not watched.
        """
        path = self._resolved.directory(raw, field)
        root = self.root_for(path)
        if root is not None:
            touched = self.root_set.touch(root)
            if touched is not None:
                self.writer.submit(
                    lambda s: s.save_root(touched.path, touched.origin, touched.last_used),
                    keep=True,
                )
            return path
        self.refuse_too_broad(path, field)
        if holds_memory_files(path):
            self._watch_new(path, raw, field, "request")
        return path

    def watch_dir(self, raw: Any, field: str = "dir") -> dict[str, Any]:
        """``watch``: make ``raw`` a permanent root, remembered across restarts."""
        path = requests.directory(raw, field)
        covering = self.root_for(path)
        known = self.root_set.get(covering) if covering else None
        if known is not None and known.origin != "request":
            return {"dir": path, "root": covering, "added": False, "origin": known.origin}
        self.refuse_too_broad(path, field)
        entry = self._watch_new(path, raw, field, "watch")
        origin = entry.origin if entry else "none"
        return {"dir": path, "root": path, "added": covering != path, "origin": origin}

    # -- index maintenance ---------------------------------------------------

    def _on_paths(self, paths: set[str], listed: set[str]) -> None:
        def job(store: IndexStore) -> None:
            syncer = self.syncer(store)
            for path in sorted(paths):
                syncer.sync_path(path)
            for directory in sorted(listed):
                syncer.sync_listing(directory)

        self.writer.submit(job, hint=True)

    def reconcile(self, reason: str) -> SyncResult:
        """Full stat scan of every root through the writer (see daemon/maintenance.py)."""
        return maintenance.reconcile(self, reason)

    def _index_rebuilt(self) -> None:
        """The writer replaced a damaged database: readers and caches of the old one go."""
        self.readers.reset()
        for hook in self.on_rebuilt:
            hook()

    def _remove_stale_temp_files(self) -> None:
        """Delete temp files a killed writer left in the roots and the reports dir."""
        removed = remove_stale_temp_files([*self.roots, str(self.cfg.reports_dir)])
        if removed:
            log.info("daemon.temp_files_removed", count=removed)

    def reload(self) -> None:
        """SIGHUP: re-read the config file; every setting but the paths is applied.

        The file is validated whole before anything changes, so a bad file
        leaves the running configuration exactly as it was. Roots added to the
        file are watched and indexed; roots taken out of it are unwatched and
        their rows dropped. ``socket`` and ``state_dir`` need a restart.
        """
        try:
            fresh = config_mod.load(self.cfg.source)
        except Exception as exc:
            log.error("daemon.reload_failed", error=str(exc))
            return
        removed = {os.path.realpath(r) for r in self.cfg.roots} - {
            os.path.realpath(r) for r in fresh.roots
        }
        self.cfg = replace(
            self.cfg,
            roots=fresh.roots,
            anthropic=fresh.anthropic,
            log_queries=fresh.log_queries,
            reconcile_interval=fresh.reconcile_interval,
            request_root_idle_days=fresh.request_root_idle_days,
            telemetry_keep_days=fresh.telemetry_keep_days,
            telemetry_keep_runs=fresh.telemetry_keep_runs,
            max_request_roots=fresh.max_request_roots,
            max_connections=fresh.max_connections,
            idle_timeout=fresh.idle_timeout,
            settle_ms=fresh.settle_ms,
            report_cron=fresh.report_cron,
            report_older_than_days=fresh.report_older_than_days,
            report_keep=fresh.report_keep,
            report_max_age_days=fresh.report_max_age_days,
            checkouts=fresh.checkouts,
        )
        self.watcher.settle = fresh.settle_ms / 1000
        if self.server is not None:
            self.server.max_connections = fresh.max_connections
            self.server.idle_timeout = fresh.idle_timeout
        for root in sorted(removed):
            entry = self.root_set.get(root)
            if entry is not None and entry.origin == "configured":
                self.forget_root(root, reason="removed from the config")
        for root in fresh.roots:
            real = os.path.realpath(root)
            if self.root_for(real) is None:
                self._add_root(real, "configured", index=True, wait=False)
        self.scheduler.reschedule_job(
            "reconcile", trigger="interval", seconds=self.cfg.reconcile_interval
        )
        for callback in self.on_reload:
            callback(self.cfg)
        log.info("daemon.reloaded", config=str(self.cfg.source))
        systemd.notify("STATUS=configuration reloaded")

    # -- stopping -------------------------------------------------------------

    def release_paths(self) -> None:
        """Remove our socket file and pidfile: the daemon no longer takes new clients."""
        if self._socket_inode is not None:
            runtime.remove_socket(self.cfg.socket, self._socket_inode)
            self._socket_inode = None
        self.pidfile.release()

    def _shutdown(self) -> None:
        self.state = "stopping"
        self.ready.set()  # requests held during start-up get their error now
        systemd.notify("STOPPING=1")
        if self.server is not None:
            self.server.stop()
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)
        self.watcher.stop()
        for callback in self.on_stop:
            callback()
        if self._writer is not None:
            self._writer.close()
        self.release_paths()
        log.info("daemon.stopped")
