"""The daemon process: claim the socket, open the index, run the composed parts, reload, stop.

The main thread handles signals and reloads and never walks a tree; the stop
runs in reverse order of the start.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from dataclasses import replace
from pathlib import Path

import structlog

from memoryd import config as config_mod
from memoryd.config import Config
from memoryd.daemon import runtime
from memoryd.daemon.compose import Parts, compose
from memoryd.daemon.lifecycle import Lifecycle, Where, preload, wait_for
from memoryd.daemon.maintenance import WallClock
from memoryd.daemon.roots import Origin
from memoryd.errors import DaemonError
from memoryd.indexer.queries import iso_utc
from memoryd.indexer.recovery import open_or_recover

log = structlog.get_logger("memoryd.daemon")

CLAUDE_MODULE = "memoryd.select.claude"
OPENAI_MODULE = "memoryd.select.openai_compat"


class Daemon:
    """Claims the socket, composes the parts, runs them; ``run()`` blocks until it stops."""

    def __init__(self, cfg: Config, roots: list[tuple[str, Origin]]) -> None:
        self.cfg = cfg
        self.life = Lifecycle()
        self._reload_requested = threading.Event()
        self._declared = roots
        self.pidfile = runtime.PidFile(cfg.pidfile)
        self._socket_inode: int | None = None  # the file we bound (None: systemd's, or removed)
        self._socket_lock = threading.Lock()
        self._socket_trouble: str | None = None
        self._activated = False
        self._clock = WallClock()
        self._parts: Parts | None = None

    def run(self) -> int:
        # Before the pidfile exists: a SIGTERM sent as soon as it appears stops cleanly too.
        self._install_signals()
        life = self.life
        listener = self._claim()
        try:
            store, recovery = open_or_recover(self.cfg.db_path)
            if recovery is not None:
                log.error(
                    "index.recovered_from_damage",
                    reason=recovery.reason,
                    moved_to=str(recovery.moved_to),
                    salvaged=recovery.salvaged,
                )
            where = Where(
                socket=str(self.cfg.socket),
                activated=self._activated,
                db=str(self.cfg.db_path),
                release=self.release_paths,
                rebind=self._rebound,
            )
            parts = self._parts = compose(self.cfg, store, listener, life, where)
            parts.roots.restore(self._declared)
            if life.stop_requested.is_set():
                return life.exit_code
            # Once compose has done the main thread's imports, so no module is shared.
            judges = (
                (CLAUDE_MODULE, self.cfg.anthropic.api_key),
                (OPENAI_MODULE, self.cfg.openai.base_url),
            )
            preloads = [preload(module) for module, wanted in judges if wanted]
            parts.server.start(parts.handlers)
            roots = parts.roots.paths
            runtime.notify(f"STATUS=indexing {len(roots())} root(s)")
            parts.maintenance.reconcile_quietly("startup")
            wait_for(preloads, life.stop_requested)
            parts.schedule()
            if life.stop_requested.is_set():
                return life.exit_code
            life.state = "ready"
            life.ready.set()
            runtime.notify("READY=1", f"STATUS=watching {len(roots())} root(s)")
            log.info(
                "daemon.ready",
                socket=str(self.cfg.socket),
                roots=roots(),
                pid=os.getpid(),
                activated=self._activated,
            )
            while not life.stop_requested.wait(0.5):
                if self._clock.went_back():
                    log.warning("daemon.clock_set_back")
                    parts.schedule()
                if self._reload_requested.is_set():
                    self._reload_requested.clear()
                    self.reload(parts)
        finally:
            if self._parts is None:  # not composed: no server owns it
                listener.close()
            self._shutdown()
        return life.exit_code

    def _claim(self) -> socket.socket:
        """Pidfile, then socket (activated or bound), in watchman's order."""
        runtime.ensure_state_dir(self.cfg.state_dir)
        runtime.claim(self.pidfile, self.cfg.socket)
        try:
            passed = runtime.listen_fds()
            if passed:
                self._activated = True
                # systemd bound it where the socket unit says, whatever memoryd
                # would have chosen: status and logs name that path.
                bound = passed[0].getsockname()
                if isinstance(bound, str) and bound:
                    self.cfg = replace(self.cfg, socket=Path(bound))
                return passed[0]
            sock, self._socket_inode = runtime.bind_socket(self.cfg.socket)
            return sock
        except BaseException:
            self.pidfile.release()
            raise

    def _rebound(self) -> socket.socket | None:
        """Every second on the accept thread: a new socket if our socket file is gone (another
        daemon's live socket, a file that is not a socket, or systemd's socket lost: logged)."""
        with self._socket_lock:
            inode, path = self._socket_inode, self.cfg.socket
            if self.life.stop_requested.is_set() or self.life.state == "stopping":
                return None
            if self._activated:
                if not path.exists() and self._socket_trouble is None:
                    self._socket_trouble = "deleted"
                    log.error("daemon.socket_lost", socket=str(path), activated=True)
                return None
            if inode is None or runtime.socket_is(path, inode):
                return None
            try:
                sock, self._socket_inode = runtime.bind_socket(path)
            except (DaemonError, OSError) as exc:
                if self._socket_trouble != str(exc):
                    self._socket_trouble = str(exc)
                    log.error("daemon.socket_rebind_failed", socket=str(path), error=str(exc))
                return None
            self._socket_trouble = None
            log.warning("daemon.socket_rebound", socket=str(path))
            return sock

    def _install_signals(self) -> None:
        stop = self.life.stop_requested
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        # The main loop runs the reload: one at a time, and a burst of signals
        # while one runs becomes one more reload, not overlapping threads.
        signal.signal(signal.SIGHUP, self._hangup)
        # A file-size limit (RLIMIT_FSIZE) must fail the write (EFBIG, a full disk to
        # the index), not kill the daemon, which is SIGXFSZ's default.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    def _hangup(self, *_: object) -> None:
        """SIGHUP: a reload, and a deleted socket file bound again at once."""
        self._reload_requested.set()
        if self._parts is not None:
            self._parts.server.check_listener()

    def reload(self, parts: Parts) -> None:
        """SIGHUP: re-read the config; every setting but the paths is applied. A file refused
        whole (roots included) changes nothing, and ``status`` says why."""
        try:
            fresh = config_mod.load(self.cfg.source)
            refused = parts.roots.refused(fresh.roots)
        except Exception as exc:
            refused = str(exc)
        self.life.last_reload = {
            "at": iso_utc(time.time()),
            "applied": refused is None,
            "reason": refused,
        }
        if refused is not None:
            log.error("daemon.reload_failed", error=refused, kept="the running configuration")
            runtime.notify("STATUS=configuration reload refused")
            return
        # The paths stay: the socket, the state and the index are this process's.
        self.cfg = replace(
            fresh, socket=self.cfg.socket, state_dir=self.cfg.state_dir, db=self.cfg.db
        )
        parts.reconfigure(self.cfg)
        log.info("daemon.reloaded", config=str(self.cfg.source))
        runtime.notify("STATUS=configuration reloaded")

    def release_paths(self) -> None:
        """Remove our socket file and pidfile: the daemon no longer takes new clients."""
        with self._socket_lock:
            if self._socket_inode is not None:
                runtime.remove_socket(self.cfg.socket, self._socket_inode)
                self._socket_inode = None
        self.pidfile.release()

    def _shutdown(self) -> None:
        self.life.state = "stopping"
        self.life.ready.set()  # requests held during start-up get their error now
        runtime.notify("STOPPING=1")
        if self._parts is not None:
            self._parts.stop()
        self.release_paths()
        log.info("daemon.stopped")
