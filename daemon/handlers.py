"""Socket methods of the daemon core: status, reindex, watch, unwatch, shutdown.

Each handler validates its params (``invalid_params`` names the field), reads
through the calling thread's read-only connection and writes only by
submitting a job to the writer.
"""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING, Any

from memoryd import __version__
from memoryd.daemon import query_handlers, report_handlers, staleness_handlers
from memoryd.daemon.roots import PERSISTED
from memoryd.errors import InvalidParams, NotFound
from memoryd.indexer import queries
from memoryd.indexer.folders import empty_folder_note
from memoryd.indexer.sync import Syncer
from memoryd.ipc import params as p
from memoryd.ipc.protocol import PROTOCOL_VERSION
from memoryd.ipc.server import Handler

if TYPE_CHECKING:
    from memoryd.daemon.app import Daemon

COUNTS_MAX_AGE = 2.0
"""Seconds a root's file counts may be reused by ``status`` when nothing was written."""

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


def build_handlers(daemon: Daemon) -> dict[str, Handler]:
    """The method table: the core methods here, then each feature module's."""
    handlers: dict[str, Handler] = {}
    capabilities = list(BASE_CAPABILITIES)

    counts: dict[str, tuple[int, float, tuple[int, int]]] = {}

    def root_counts(root: str) -> tuple[int, int]:
        """Files and errors under ``root``, recounted when the writer has written since.

        A short age limit also catches writes by another process (``memoryd
        index`` on the same database), which do not bump the generation.
        """
        generation, now = daemon.writer.store.generation, time.monotonic()
        cached = counts.get(root)
        if cached is not None and cached[0] == generation and now - cached[1] < COUNTS_MAX_AGE:
            return cached[2]
        value = queries.counts_under(daemon.readers.conn(), root)
        counts[root] = (generation, now, value)
        return value

    def counted() -> list[tuple[str, int, int]]:
        return [(root, *root_counts(root)) for root in daemon.roots]

    def root_entry(root: str) -> dict[str, Any]:
        """Where a root came from and, for a request root, when it will be forgotten."""
        entry = daemon.root_set.get(root)
        origin = entry.origin if entry else "none"
        forget = None
        if entry is not None and origin == "request":
            forget = _iso(entry.last_used + daemon.idle_seconds)
        return {
            "path": root,
            "origin": origin,
            "forget_after": forget,
            "watcher": daemon.watcher.modes.get(root, "none"),
        }

    def status(params: dict[str, Any]) -> dict[str, Any]:
        p.reject_unknown(params, ())
        roots = [
            {
                **root_entry(root),
                "files": n,
                "errors": e,
                **(daemon.staleness.checkout_of(root) if daemon.staleness else {}),
            }
            for root, n, e in counted()
        ]
        rec = daemon.last_reconcile
        return {
            "protocol": PROTOCOL_VERSION,
            "capabilities": sorted(capabilities),
            "version": __version__,
            "pid": os.getpid(),
            "state": daemon.state,
            "uptime_s": round(time.time() - daemon.started, 3),
            "socket": str(daemon.cfg.socket),
            "db": str(daemon.cfg.db_path),
            "roots": roots,
            "last_event": _iso(daemon.watcher.last_event),
            "last_reconcile": None
            if rec is None
            else {
                "at": _iso(rec.at),
                "reason": rec.reason,
                "seconds": round(rec.seconds, 4),
                "drift": rec.drift,
            },
            "drift_fixed_total": daemon.drift_fixed_total,
            "indexing": None if daemon.indexing is None else daemon.indexing.to_json(),
            "writer_queue": daemon.writer.depth,
            "connections": daemon.server.connections if daemon.server else 0,
            **daemon.extra_status,
        }

    def reindex(params: dict[str, Any]) -> dict[str, Any]:
        p.reject_unknown(params, ("dir",))
        if params.get("dir") is None:
            result, dirs = daemon.reconcile("reindex"), list(daemon.roots)
        else:
            directory = daemon.ensure_dir(params.get("dir"))
            if daemon.root_for(directory) is None:
                # Scanning it would index its subfolders with no root to keep them fresh.
                raise InvalidParams(
                    f"'dir': not reindexed: {empty_folder_note(directory)}", {"field": "dir"}
                )
            result, dirs = daemon.writer.call(lambda s: Syncer(s).sync_tree(directory)), [directory]
        conn = daemon.readers.conn()
        result.errors = [e for d in dirs for e in queries.errors_under(conn, d)]
        return {**result.to_json(), "dirs": dirs}

    def watch(params: dict[str, Any]) -> dict[str, Any]:
        p.reject_unknown(params, ("dir",))
        reply = daemon.watch_dir(params.get("dir"))
        return {**reply, "watcher": daemon.watcher.modes.get(reply["root"] or "", "none")}

    def unwatch(params: dict[str, Any]) -> dict[str, Any]:
        p.reject_unknown(params, ("dir",))
        raw = params.get("dir")
        if not isinstance(raw, str) or not raw:
            raise InvalidParams("'dir' must be a directory path", {"field": "dir"})
        path = os.path.realpath(os.path.expanduser(raw))
        entry = daemon.root_set.get(path)
        if entry is None:
            roots = ", ".join(daemon.roots) or "none"
            raise NotFound(f"{raw} is not a watched root (roots: {roots})", {"roots": daemon.roots})
        dropped = daemon.forget_root(path, reason="unwatch")
        back = entry.origin not in PERSISTED
        return {
            "dir": path,
            "removed": True,
            "origin": entry.origin,
            "files_forgotten": dropped,
            "returns_at_restart": back,
        }

    def shutdown(params: dict[str, Any]) -> dict[str, Any]:
        p.reject_unknown(params, ())
        # As dmypy does: stop being findable before saying yes, so a client
        # that starts a new daemon right after the reply never races us.
        daemon.release_paths()
        threading.Timer(0.05, daemon.stop_requested.set).start()
        return {"stopping": True, "pid": os.getpid()}

    handlers.update(status=status, reindex=reindex, watch=watch, unwatch=unwatch, shutdown=shutdown)
    handlers.update(query_handlers.handlers(daemon))
    for feature in FEATURES:
        capabilities.extend(feature.CAPABILITIES)
    return handlers
