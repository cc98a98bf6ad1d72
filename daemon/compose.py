"""The daemon's parts, built in one place, in dependency order.

:func:`compose` is the only code that knows every part; each gets what it uses
as constructor arguments, never the daemon, and no collaborator later.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from apscheduler.schedulers.background import BackgroundScheduler

from memoryd.config import Config
from memoryd.daemon import health
from memoryd.daemon.handlers import DaemonMethods
from memoryd.daemon.index import DaemonIndex, Readers, RunRows
from memoryd.daemon.lifecycle import Job, Lifecycle, Where
from memoryd.daemon.maintenance import Maintenance, repairer
from memoryd.daemon.reporter import Reporter
from memoryd.daemon.roots import RootSet, WatchedRoots, hint_sink
from memoryd.daemon.staleness_checker import Staleness
from memoryd.daemon.watcher import Watcher
from memoryd.daemon.writer import Writer
from memoryd.indexer.store import IndexStore
from memoryd.ipc.server import Handler, Server
from memoryd.select.wiring import make_selector
from memoryd.service import MemoryService


class Reconfigurable(Protocol):
    """A part that takes the new config on SIGHUP (every setting but the paths)."""

    def reconfigure(self, cfg: Config) -> None: ...


class Scheduled(Protocol):
    """A part with periodic jobs, handed over as data each time they are installed."""

    def jobs(self) -> list[Job]: ...


@dataclass(frozen=True)
class Parts:
    """What :func:`compose` built; the daemon starts, reloads and stops it."""

    writer: Writer
    watcher: Watcher
    roots: WatchedRoots
    scheduler: BackgroundScheduler
    maintenance: Maintenance
    server: Server
    handlers: dict[str, Handler]
    reconfigurable: Sequence[Reconfigurable]
    scheduled: Sequence[Scheduled]

    def reconfigure(self, cfg: Config) -> None:
        for part in self.reconfigurable:
            part.reconfigure(cfg)
        if self.scheduler.running:
            self.schedule()

    def schedule(self) -> None:
        """Install every periodic job from a fresh trigger (so: from now) and run them: after
        start-up, a reload, and the wall clock set back (apscheduler counts in it)."""
        self.scheduler.remove_all_jobs()
        for part in self.scheduled:
            for job in part.jobs():
                self.scheduler.add_job(job.run, job.trigger, id=job.id, replace_existing=True)
        if not self.scheduler.running:
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
    """Every part of a daemon serving ``listener`` over ``store``; nothing is walked yet (the
    writer and watcher threads run from here on). ``clock`` dates roots' use."""
    readers = Readers(cfg.db_path)
    selector = make_selector(cfg)
    root_set = RootSet(clock)
    runs = RunRows(cfg)

    def index_rebuilt() -> None:  # readers and caches of the old database go
        readers.reset()
        selector.index_replaced()

    writer = Writer(
        store, on_fatal=life.fail, repair=repairer(root_set, runs), on_rebuilt=index_rebuilt
    )
    watcher = Watcher(hint_sink(writer, root_set), settle=cfg.settle_ms / 1000)
    roots = WatchedRoots(cfg, root_set, watcher, writer)
    maintenance = Maintenance(cfg, roots, watcher, writer, stop=life.stop_requested)
    index = DaemonIndex(readers, writer, roots, runs)
    reporter = Reporter(cfg, roots.paths, readers)
    staleness = Staleness(cfg, roots, writer, readers, write=index.write)
    service = MemoryService(index, selector, staleness.checker, reporter)
    server = Server(
        listener,
        cfg,
        on_fatal=life.fail,
        on_disconnect=readers.release,
        rebind=where.rebind,
    )
    methods = DaemonMethods(
        life,
        where,
        service=service,
        roots=roots,
        watcher=watcher,
        writer=writer,
        readers=readers,
        maintenance=maintenance,
        staleness=staleness,
        server=server,
        status_parts=[reporter, maintenance],
    ).table()
    return Parts(
        writer=writer,
        watcher=watcher,
        roots=roots,
        scheduler=BackgroundScheduler(
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 3600}
        ),
        maintenance=maintenance,
        server=server,
        handlers=health.guard(methods, life, writer),
        reconfigurable=[
            watcher,
            server,
            roots,
            maintenance,
            runs,
            service,
            reporter,
            staleness,
        ],
        scheduled=[maintenance, reporter, staleness],
    )
