"""Socket methods of the daemon core: status, list, reindex, watch, shutdown.

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
from memoryd.daemon import query_handlers, report_handlers, session_handlers
from memoryd.indexer import queries
from memoryd.indexer.sync import Syncer
from memoryd.ipc import params as p
from memoryd.ipc.protocol import PROTOCOL_VERSION
from memoryd.ipc.server import Handler
from memoryd.select.manifest import superseded_in

if TYPE_CHECKING:
    from memoryd.daemon.app import Daemon

COUNTS_MAX_AGE = 2.0
"""Seconds a root's file counts may be reused by ``status`` when nothing was written."""

# Modules that add methods: each has CAPABILITIES and handlers(daemon).
FEATURES = (query_handlers, session_handlers, report_handlers)

# Features a client may test for; feature modules append theirs.
BASE_CAPABILITIES = ["status", "list", "reindex", "watch", "shutdown", "peer-uid-check"]


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

    def status(params: dict[str, Any]) -> dict[str, Any]:
        p.reject_unknown(params, ())
        roots = []
        for root in list(daemon.roots):
            files, errors = root_counts(root)
            roots.append(
                {
                    "path": root,
                    "files": files,
                    "errors": errors,
                    "watcher": daemon.watcher.modes.get(root, "none"),
                }
            )
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
            "writer_queue": daemon.writer.depth,
            "connections": daemon.server.connections if daemon.server else 0,
            **daemon.extra_status,
        }

    def list_(params: dict[str, Any]) -> dict[str, Any]:
        p.reject_unknown(params, ("dir",))
        directory = daemon.ensure_dir(params.get("dir"))
        files = queries.files_under(daemon.readers.conn(), directory)
        return queries.listing(files, directory, superseded_in(files))

    def reindex(params: dict[str, Any]) -> dict[str, Any]:
        p.reject_unknown(params, ("dir",))
        if params.get("dir") is None:
            result, dirs = daemon.reconcile("reindex"), list(daemon.roots)
        else:
            directory = daemon.ensure_dir(params.get("dir"))
            result, dirs = daemon.writer.call(lambda s: Syncer(s).sync_tree(directory)), [directory]
        conn = daemon.readers.conn()
        result.errors = [e for d in dirs for e in queries.errors_under(conn, d)]
        return {**result.to_json(), "dirs": dirs}

    def watch(params: dict[str, Any]) -> dict[str, Any]:
        p.reject_unknown(params, ("dir",))
        before = daemon.root_for(
            os.path.realpath(params["dir"]) if isinstance(params.get("dir"), str) else ""
        )
        directory = daemon.ensure_dir(params.get("dir"))
        return {
            "dir": directory,
            "root": daemon.root_for(directory),
            "added": before is None,
            "watcher": daemon.watcher.modes.get(daemon.root_for(directory) or "", "none"),
        }

    def shutdown(params: dict[str, Any]) -> dict[str, Any]:
        p.reject_unknown(params, ())
        # As dmypy does: stop being findable before saying yes, so a client
        # that starts a new daemon right after the reply never races us.
        daemon.release_paths()
        threading.Timer(0.05, daemon.stop_requested.set).start()
        return {"stopping": True, "pid": os.getpid()}

    handlers.update(status=status, list=list_, reindex=reindex, watch=watch, shutdown=shutdown)
    for feature in FEATURES:
        handlers.update(feature.handlers(daemon))
        capabilities.extend(feature.CAPABILITIES)
    return handlers
