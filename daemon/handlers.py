"""The daemon's one method table, and the methods only the daemon answers.

:class:`DaemonMethods` answers ``status``, ``reindex``, ``watch``, ``unwatch``,
``shutdown`` and ``select``'s ``cwd``; every other method is the
:class:`~memoryd.service.MemoryService`'s. ``status`` answers whatever the
index's state (a read it cannot make is said in its ``index`` entry).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from memoryd import __version__, methods
from memoryd import requests as p
from memoryd.daemon import alarms, health
from memoryd.daemon.roots import PERSISTED
from memoryd.errors import InvalidParams, NotFound, StoreError
from memoryd.indexer import queries
from memoryd.indexer.scanner import empty_folder_note
from memoryd.ipc.protocol import PROTOCOL_VERSION
from memoryd.ipc.server import Handler
from memoryd.methods import Reindex, Select, Shutdown, Status, Unwatch, Watch
from memoryd.replies import (
    FeatureStatus,
    LastReconcile,
    ReindexReply,
    RootStatus,
    SelectResult,
    ShutdownReply,
    StatusReply,
    UnwatchReply,
    WatchReply,
)

if TYPE_CHECKING:
    from memoryd.daemon.index import Readers
    from memoryd.daemon.lifecycle import Lifecycle, Where
    from memoryd.daemon.maintenance import Maintenance, ReconcileInfo
    from memoryd.daemon.roots import WatchedRoots
    from memoryd.daemon.staleness_checker import Staleness
    from memoryd.daemon.watcher import Watcher
    from memoryd.daemon.writer import Writer
    from memoryd.ipc.server import Server
    from memoryd.service import MemoryService

log = structlog.get_logger(__name__)

MAX_CWD = 4096
COUNTS_MAX_AGE = 2.0  # seconds status may reuse a root's counts when nothing was written


def _iso(epoch: float | None) -> str | None:
    return None if epoch is None else queries.iso_utc(epoch)


def _reconcile_json(rec: ReconcileInfo | None) -> LastReconcile | None:
    if rec is None:
        return None
    return {
        "at": queries.iso_utc(rec.at),
        "reason": rec.reason,
        "seconds": round(rec.seconds, 4),
        "drift": rec.drift,
    }


class StatusPart(Protocol):
    """A feature's share of ``status``: keys merged into the reply's top level."""

    def status(self) -> FeatureStatus: ...


class DaemonMethods:
    """The methods the daemon answers itself, over the parts they need."""

    def __init__(
        self,
        life: Lifecycle,
        where: Where,
        *,
        service: MemoryService,
        roots: WatchedRoots,
        watcher: Watcher,
        writer: Writer,
        readers: Readers,
        maintenance: Maintenance,
        staleness: Staleness,
        server: Server,
        status_parts: Sequence[StatusPart],
    ) -> None:
        self.life, self.where, self.service = life, where, service
        self.roots, self.watcher, self.writer, self.readers = roots, watcher, writer, readers
        self.maintenance, self.staleness, self.server = maintenance, staleness, server
        self.status_parts = status_parts
        self.capabilities = methods.capabilities()
        self._counts: dict[str, tuple[int, float, tuple[int, int]]] = {}

    def table(self) -> dict[str, Handler]:
        """Each method's ``cmd_*`` here, else the service's: the daemon's only method table."""
        table: dict[str, Handler] = {}
        for name in methods.METHODS:
            found = methods.handler(self, name) or methods.handler(self.service, name)
            if found is None:
                raise RuntimeError(f"no handler answers the method {name!r}")
            table[name] = found
        return table

    def refused(self, method: str, params: Mapping[str, Any], error: InvalidParams) -> None:
        self.service.refused(method, params, error)

    def _root_counts(self, root: str) -> tuple[int, int]:
        """Files and errors under ``root``, recounted when the writer has written since (or,
        for another process's writes, after :data:`COUNTS_MAX_AGE`)."""
        generation, now = self.writer.store.generation, time.monotonic()
        cached = self._counts.get(root)
        if cached is not None and cached[0] == generation and now - cached[1] < COUNTS_MAX_AGE:
            return cached[2]
        value = queries.counts_under(self.readers.conn(), root)
        self._counts[root] = (generation, now, value)
        return value

    def _root_json(self, root: str, counts: tuple[int, int]) -> RootStatus:
        found = self.roots.get(root)
        forget_at = None
        if found is not None and found.origin == "request":
            forget_at = found.last_used + self.roots.idle_seconds
        mode, note = self.watcher.mode_of(root)
        recrawls = self.maintenance.recrawls.get(root)
        entry: RootStatus = {
            "path": root,
            "origin": found.origin if found else "none",
            "forget_after": _iso(forget_at),
            "watcher": mode or "none",
            "files": counts[0],
            "errors": counts[1],
            "recrawls": recrawls.count if recrawls else 0,
            "last_recrawl": _reconcile_json(recrawls.last if recrawls else None),
        }
        if note is not None:
            entry["watcher_note"] = note
        entry["checkout"] = self.staleness.checker.resolutions.get(root)  # as the last pass found
        return entry

    def status(self) -> FeatureStatus:
        """``alarms``: what quietly stopped working (the index's once the first one is done)."""
        conn = self.readers.conn if self.life.is_ready else None
        return {"alarms": alarms.find(self.roots.paths(), self.watcher, self.maintenance, conn)}

    def cmd_status(self, req: Status) -> StatusReply:
        life, maintenance, server = self.life, self.maintenance, self.server
        extra: FeatureStatus = {}
        for part in (*self.status_parts, self):
            try:
                extra.update(part.status())
            except Exception:  # one part's defect must not cost the whole status answer
                log.exception("status.part_failed", part=type(part).__name__)
        index, store, roots = self.writer.health.to_json(), self.writer.store, self.roots.paths()
        try:
            counts = [self._root_counts(root) for root in roots]
        except (sqlite3.Error, StoreError) as exc:
            found = health.trouble(exc, store, self.writer)
            if found is None:
                raise
            index["reason"] = found[0]
            if found[1]:
                index["state"] = health.REBUILDING
            counts = [self._counts[r][2] if r in self._counts else (0, 0) for r in roots]
        reply: StatusReply = {
            "protocol": PROTOCOL_VERSION,
            "capabilities": self.capabilities,
            "version": __version__,
            "pid": os.getpid(),
            "state": life.state,
            "uptime_s": round(time.time() - life.started, 3),
            "socket": self.where.socket,
            "activated": self.where.activated,
            "db": self.where.db,
            "roots": [self._root_json(root, n) for root, n in zip(roots, counts, strict=True)],
            "last_event": _iso(self.watcher.last_event),
            "last_reconcile": _reconcile_json(maintenance.last_reconcile),
            "drift_fixed_total": maintenance.drift_fixed_total,
            "indexing": None if maintenance.indexing is None else maintenance.indexing.to_json(),
            "writer_queue": self.writer.depth,
            "index": index,
            "connections": server.connections,
            "connections_refused": server.refused,
        }
        if life.last_reload is not None:
            reply["last_reload"] = life.last_reload
        return {**reply, **extra}

    def cmd_reindex(self, req: Reindex) -> ReindexReply:
        roots = self.roots
        if req.dir is None:
            result, dirs = self.maintenance.reconcile("reindex"), roots.paths()
        else:
            directory = roots.ensure_dir(req.dir)
            if roots.root_for(directory) is None:
                # Scanning it would index its subfolders with no root to keep them fresh.
                raise InvalidParams(
                    f"'dir': not reindexed: {empty_folder_note(directory)}", {"field": "dir"}
                )
            result = self.writer.call(lambda s: roots.syncer(s).sync_tree(directory))
            dirs = [directory]
        conn = self.readers.conn()
        result.errors = [e for d in dirs for e in queries.errors_under(conn, d)]
        return {**result.to_json(), "dirs": dirs}

    def cmd_watch(self, req: Watch) -> WatchReply:
        found = self.roots.watch_dir(req.dir)
        mode, _ = self.watcher.mode_of(found["root"] or "")
        return {**found, "watcher": mode or "none"}

    def cmd_unwatch(self, req: Unwatch) -> UnwatchReply:
        path = p.real_path(req.dir)
        found = self.roots.get(path)
        if found is None:
            roots = self.roots.paths()
            raise NotFound(
                f"{req.dir} is not a watched root (roots: {', '.join(roots) or 'none'})",
                {"roots": roots},
            )
        return {
            "dir": path,
            "removed": True,
            "origin": found.origin,
            "files_forgotten": self.roots.forget(path, reason="unwatch"),
            "returns_at_restart": found.origin not in PERSISTED,
        }

    def cmd_shutdown(self, req: Shutdown) -> ShutdownReply:
        """Stop being findable now, and stop the daemon a moment later."""
        # Unfindable before the reply: a client starting a new daemon right after never races us.
        self.where.release()
        threading.Timer(0.05, self.life.stop_requested.set).start()
        return {"stopping": True, "pid": os.getpid()}

    def cmd_select(self, req: Select) -> SelectResult:
        """The service's ``select``; the hook's ``cwd`` is then handed to the checker."""
        cwd = req.cwd
        if cwd is not None and (not cwd.startswith("/") or "\0" in cwd or len(cwd) > MAX_CWD):
            raise InvalidParams(
                "'cwd' must be an absolute directory path (the agent's working directory)",
                {"field": "cwd"},
            )
        result = self.service.cmd_select(req)
        if cwd is not None:
            self.staleness.note_cwd(req.dir, cwd)
        return result
