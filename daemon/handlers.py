"""Socket methods of the daemon core: status, reindex, watch, unwatch, shutdown.

Each handler checks its params (``invalid_params`` names the field), asks
the daemon's narrow :class:`~memoryd.daemon.core.Core` and encodes the
answer; it never touches the ``Daemon`` itself. The methods that read or
write memories come from the service's table (daemon/query_handlers.py).
"""

from __future__ import annotations

import os
import time
from typing import Any

from memoryd import __version__
from memoryd.daemon import query_handlers, report_handlers, staleness_handlers
from memoryd.daemon.core import Core, RootState
from memoryd.daemon.roots import PERSISTED
from memoryd.errors import InvalidParams, NotFound
from memoryd.indexer import queries
from memoryd.indexer.folders import empty_folder_note
from memoryd.ipc import params as p
from memoryd.ipc.protocol import PROTOCOL_VERSION
from memoryd.ipc.server import Handler

# Modules whose features add capabilities; their methods are the service's (query_handlers).
FEATURES = (query_handlers, report_handlers, staleness_handlers)

# Features a client may test for; feature modules append theirs.
BASE_CAPABILITIES = [
    "status",
    "list",
    "reindex",
    "watch",
    "unwatch",
    "request-root-expiry",
    "shutdown",
    "peer-uid-check",
]


def _iso(epoch: float | None) -> str | None:
    return None if epoch is None else queries.iso_utc(epoch)


def _root_json(root: RootState) -> dict[str, Any]:
    entry = {
        "path": root.path,
        "origin": root.origin,
        "forget_after": _iso(root.forget_at),
        "watcher": root.watcher,
        "files": root.files,
        "errors": root.errors,
    }
    if root.watcher_note is not None:
        entry["watcher_note"] = root.watcher_note
    return entry if root.checkout is None else {**entry, **root.checkout}


def build_handlers(core: Core, service_methods: dict[str, Handler]) -> dict[str, Handler]:
    """The method table: the core methods here, then the service's methods."""
    capabilities = sorted([*BASE_CAPABILITIES, *(c for f in FEATURES for c in f.CAPABILITIES)])

    def status(params: dict[str, Any]) -> dict[str, Any]:
        p.reject_unknown(params, ())
        run = core.runtime()
        rec = run.last_reconcile
        return {
            "protocol": PROTOCOL_VERSION,
            "capabilities": capabilities,
            "version": __version__,
            "pid": os.getpid(),
            "state": run.state,
            "uptime_s": round(time.time() - run.started, 3),
            "socket": run.socket,
            "activated": run.activated,
            "db": run.db,
            "roots": [_root_json(root) for root in core.root_states()],
            "last_event": _iso(run.last_event),
            "last_reconcile": None
            if rec is None
            else {
                "at": _iso(rec.at),
                "reason": rec.reason,
                "seconds": round(rec.seconds, 4),
                "drift": rec.drift,
            },
            "drift_fixed_total": run.drift_fixed_total,
            "indexing": run.indexing,
            "writer_queue": run.writer_queue,
            "index": run.index,
            "connections": run.connections,
            "connections_refused": run.connections_refused,
            **run.extra,
        }

    def reindex(params: dict[str, Any]) -> dict[str, Any]:
        p.reject_unknown(params, ("dir",))
        if params.get("dir") is None:
            result, dirs = core.reconcile("reindex"), core.roots()
        else:
            directory = core.ensure_dir(params.get("dir"))
            if core.root_for(directory) is None:
                # Scanning it would index its subfolders with no root to keep them fresh.
                raise InvalidParams(
                    f"'dir': not reindexed: {empty_folder_note(directory)}", {"field": "dir"}
                )
            result, dirs = core.sync_tree(directory), [directory]
        result.errors = core.errors_under(dirs)
        return {**result.to_json(), "dirs": dirs}

    def watch(params: dict[str, Any]) -> dict[str, Any]:
        p.reject_unknown(params, ("dir",))
        return core.watch(params.get("dir"))

    def unwatch(params: dict[str, Any]) -> dict[str, Any]:
        p.reject_unknown(params, ("dir",))
        raw = params.get("dir")
        if not isinstance(raw, str) or not raw:
            raise InvalidParams("'dir' must be a directory path", {"field": "dir"})
        path = os.path.realpath(os.path.expanduser(raw))
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

    def shutdown(params: dict[str, Any]) -> dict[str, Any]:
        p.reject_unknown(params, ())
        core.stop()
        return {"stopping": True, "pid": os.getpid()}

    core_methods: dict[str, Handler] = {
        "status": status,
        "reindex": reindex,
        "watch": watch,
        "unwatch": unwatch,
        "shutdown": shutdown,
    }
    return {**core_methods, **service_methods}
