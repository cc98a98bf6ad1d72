"""The daemon's parts, built in one place and handed their collaborators.

:func:`compose` is the only code that knows every part: the writer thread,
the readers, the watcher, the roots, the scheduler and its jobs, the
selector and the service over the index, the reporter, the staleness
checker, the socket methods and the server. Each part gets what it works
with as constructor arguments, never the daemon; the daemon
(daemon/app.py) keeps only its life: claiming the socket, starting,
reloading and stopping what :func:`compose` built.

Two edges point back and are wired last: the writer's repair reconciles the
roots and writes the telemetry rows held back (both built after the
writer, which they write through), and ``status`` counts the server's
connections (the server serves the methods built over it).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from apscheduler.schedulers.background import BackgroundScheduler

from memoryd.config import Config
from memoryd.daemon import health, startup
from memoryd.daemon.alarms import Alarms
from memoryd.daemon.core import DaemonCore, Where
from memoryd.daemon.daemon_index import DaemonIndex
from memoryd.daemon.handlers import DaemonMethods
from memoryd.daemon.lifecycle import Lifecycle
from memoryd.daemon.maintenance import Maintenance
from memoryd.daemon.readers import Readers
from memoryd.daemon.report_handlers import Reporter
from memoryd.daemon.roots import RootSet
from memoryd.daemon.staleness_handlers import Staleness
from memoryd.daemon.watched_roots import WatchedRoots
from memoryd.daemon.watcher import Watcher
from memoryd.daemon.writer import Writer
from memoryd.indexer.store import IndexStore
from memoryd.ipc.server import Server
from memoryd.select.wiring import make_selector
from memoryd.service import MemoryService


class Reconfigurable(Protocol):
    """A part that takes the new config on SIGHUP (every setting but the paths)."""

    def reconfigure(self, cfg: Config) -> None: ...


class ServerLimits:
    """The server's share of the config: its connection cap and idle timeout."""

    def __init__(self, server: Server) -> None:
        self._server = server

    def reconfigure(self, cfg: Config) -> None:
        self._server.max_connections = cfg.max_connections
        self._server.idle_timeout = cfg.idle_timeout


@dataclass(frozen=True)
class Parts:
    """What :func:`compose` built; the daemon starts, reloads and stops it."""

    writer: Writer
    watcher: Watcher
    roots: WatchedRoots
    scheduler: BackgroundScheduler
    maintenance: Maintenance
    staleness: Staleness
    server: Server
    reconfigurable: Sequence[Reconfigurable]

    def reconfigure(self, cfg: Config) -> None:
        for part in self.reconfigurable:
            part.reconfigure(cfg)

    def schedule(self) -> None:
        """Start the periodic jobs (the report's is installed already)."""
        self.maintenance.add_jobs()
        self.scheduler.start()

    def stop(self) -> None:
        """Stop taking requests, then events; the writer runs its kept jobs and closes last."""
        self.server.stop()
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)
        self.watcher.stop()
        self.writer.close()


def compose(
    cfg: Config,
    store: IndexStore,
    listener: socket.socket,
    life: Lifecycle,
    where: Where,
    *,
    clock: Callable[[], float] = time.time,
) -> Parts:
    """Every part of a daemon serving ``listener`` over ``store``; nothing is walked yet.

    The writer and watcher threads run from here on; the staleness thread,
    the server and the scheduler are started by the daemon. ``clock`` is
    when roots are used and go idle (tests pass their own, instead of waiting).
    """
    readers = Readers(cfg.db_path)
    root_set = RootSet(clock)
    writer = Writer(store, on_fatal=life.fail)
    # The watcher is built before the roots that own it, so its batches reach them
    # through a lambda that looks `roots` up when a batch comes (after this returns).
    watcher = Watcher(
        lambda paths, listed: roots.queue_hints(paths, listed),  # noqa: PLW0108
        on_lost=lambda root: maintenance.recrawl(root, "events-lost"),
        settle=cfg.settle_ms / 1000,
    )
    roots = WatchedRoots(cfg, root_set, watcher, writer)
    scheduler = BackgroundScheduler(
        job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 3600}
    )
    index = DaemonIndex(cfg, readers, writer, roots)
    reporter = Reporter(cfg, roots.paths, readers, scheduler)
    reporter.reconfigure(cfg)  # installs its job
    maintenance = Maintenance(
        cfg,
        roots,
        watcher,
        writer,
        scheduler=scheduler,
        stop=life.stop_requested,
        after_repair=index.flush_held,
        rescheduled=reporter.reschedule,
    )
    staleness = Staleness(cfg, roots, writer, readers, stop=life.stop_requested, write=index.write)
    service = MemoryService(index, make_selector(cfg), staleness.checker, reporter)

    def index_rebuilt() -> None:
        """The writer replaced a damaged database: readers and caches of the old one go."""
        readers.reset()
        service.index_replaced()

    writer.repair, writer.on_rebuilt = maintenance.repair, index_rebuilt
    core = DaemonCore(
        life,
        where,
        roots=roots,
        watcher=watcher,
        writer=writer,
        readers=readers,
        maintenance=maintenance,
        staleness=staleness,
        status_parts=[
            reporter,
            maintenance,
            Alarms(roots.paths, watcher, maintenance, readers, lambda: life.state == "ready"),
        ],
    )
    methods = DaemonMethods(core, service, staleness).table()
    # `status` answers (with progress) during the first reconcile; the
    # other methods wait for it.
    held = startup.gate(methods, life.ready, lambda: life.state == "ready")
    server = Server(
        listener,
        health.guard(held, writer),
        allowed_uid=os.getuid(),
        max_connections=cfg.max_connections,
        idle_timeout=cfg.idle_timeout,
        on_fatal=life.fail,
        on_disconnect=readers.release,
    )
    core.server = server
    return Parts(
        writer=writer,
        watcher=watcher,
        roots=roots,
        scheduler=scheduler,
        maintenance=maintenance,
        staleness=staleness,
        server=server,
        reconfigurable=[
            watcher,
            ServerLimits(server),
            roots,
            maintenance,
            index,
            service,
            reporter,
            staleness,
        ],
    )
