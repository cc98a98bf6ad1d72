"""The daemon's one method table, and the methods only the daemon answers.

Every socket method is looked up here by name, as dmypy's server looks up its
``cmd_*`` commands: :class:`DaemonMethods` answers ``status``, ``reindex``,
``watch``, ``unwatch`` and ``shutdown`` itself (each checks its params, asks
the daemon's narrow :class:`~memoryd.daemon.core.Core` and encodes the answer;
it never touches the ``Daemon``), and ``select``'s ``cwd``; every other method
is the shared :class:`~memoryd.service.MemoryService`'s ``cmd_*``, the same
entry the CLI's in-process fallback calls. Which methods exist, and what they
take, is :mod:`memoryd.methods`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from memoryd import __version__, methods
from memoryd import requests as p
from memoryd.daemon.core import Core, RootState
from memoryd.daemon.roots import PERSISTED
from memoryd.errors import InvalidParams, NotFound
from memoryd.indexer import queries
from memoryd.indexer.folders import empty_folder_note
from memoryd.ipc.protocol import PROTOCOL_VERSION
from memoryd.ipc.server import Handler
from memoryd.methods import Reindex, Select, Shutdown, Status, Unwatch, Watch
from memoryd.replies import (
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
    from memoryd.daemon.maintenance import ReconcileInfo
    from memoryd.daemon.staleness_checker import Staleness
    from memoryd.service import MemoryService


MAX_CWD = 4096


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


def _root_json(root: RootState) -> RootStatus:
    entry: RootStatus = {
        "path": root.path,
        "origin": root.origin,
        "forget_after": _iso(root.forget_at),
        "watcher": root.watcher,
        "files": root.files,
        "errors": root.errors,
        "recrawls": root.recrawls,
        "last_recrawl": _reconcile_json(root.last_recrawl),
    }
    if root.watcher_note is not None:
        entry["watcher_note"] = root.watcher_note
    entry["checkout"] = root.checkout
    return entry


class DaemonMethods:
    """The methods the daemon answers itself, over its core, its service and its checker."""

    def __init__(self, core: Core, service: MemoryService, staleness: Staleness) -> None:
        self.core = core
        self.service = service
        self.staleness = staleness
        self.capabilities = methods.capabilities()

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

    def cmd_status(self, req: Status) -> StatusReply:
        core = self.core
        run = core.runtime()
        reply: StatusReply = {
            "protocol": PROTOCOL_VERSION,
            "capabilities": self.capabilities,
            "version": __version__,
            "pid": os.getpid(),
            "state": run.state,
            "uptime_s": round(time.time() - run.started, 3),
            "socket": run.socket,
            "activated": run.activated,
            "db": run.db,
            "roots": [_root_json(root) for root in core.root_states()],
            "last_event": _iso(run.last_event),
            "last_reconcile": _reconcile_json(run.last_reconcile),
            "drift_fixed_total": run.drift_fixed_total,
            "indexing": run.indexing,
            "writer_queue": run.writer_queue,
            "index": run.index,
            "connections": run.connections,
            "connections_refused": run.connections_refused,
        }
        if run.last_reload is not None:
            reload = run.last_reload
            reply["last_reload"] = {
                "at": queries.iso_utc(reload.at),
                "applied": reload.refused is None,
                "reason": reload.refused,
            }
        # Then the features' entries (report_schedule, last_report).
        return {**reply, **run.extra}

    def cmd_reindex(self, req: Reindex) -> ReindexReply:
        core = self.core
        if req.dir is None:
            result, dirs = core.reconcile("reindex"), core.roots()
        else:
            directory = core.ensure_dir(req.dir)
            if core.root_for(directory) is None:
                # Scanning it would index its subfolders with no root to keep them fresh.
                raise InvalidParams(
                    f"'dir': not reindexed: {empty_folder_note(directory)}", {"field": "dir"}
                )
            result, dirs = core.sync_tree(directory), [directory]
        result.errors = core.errors_under(dirs)
        return {**result.to_json(), "dirs": dirs}

    def cmd_watch(self, req: Watch) -> WatchReply:
        return self.core.watch(req.dir)

    def cmd_unwatch(self, req: Unwatch) -> UnwatchReply:
        core = self.core
        raw = req.dir
        path = p.real_path(raw)
        origin = core.origin_of(path)
        if origin is None:
            roots = core.roots()
            raise NotFound(
                f"{raw} is not a watched root (roots: {', '.join(roots) or 'none'})",
                {"roots": roots},
            )
        dropped = core.forget(path)
        return {
            "dir": path,
            "removed": True,
            "origin": origin,
            "files_forgotten": dropped,
            "returns_at_restart": origin not in PERSISTED,
        }

    def cmd_shutdown(self, req: Shutdown) -> ShutdownReply:
        self.core.stop()
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
