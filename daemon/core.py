"""The narrow face the daemon shows its core socket methods, instead of the whole ``Daemon``.

``status``, ``reindex``, ``watch``, ``unwatch`` and ``shutdown``
(daemon/handlers.py) are parse → call → encode over a :class:`Core`: the
roots and their counts, the runtime facts ``status`` reports, and the
root bookkeeping those methods change. :class:`DaemonCore` is the one
implementation, built by the daemon over itself; it keeps the per-root file
counts cached by writer generation, so a busy ``status`` does not recount.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from memoryd.indexer import queries
from memoryd.indexer.sync import SyncResult

if TYPE_CHECKING:
    from memoryd.daemon.app import Daemon
    from memoryd.daemon.maintenance import ReconcileInfo

COUNTS_MAX_AGE = 2.0
"""Seconds a root's file counts may be reused by ``status`` when nothing was written."""


@dataclass(frozen=True)
class RootState:
    """One root as ``status`` shows it; ``checkout`` is None when no checker runs."""

    path: str
    origin: str
    forget_at: float | None
    watcher: str
    watcher_note: str | None
    files: int
    errors: int
    checkout: dict[str, Any] | None


@dataclass(frozen=True)
class Runtime:
    """The process-wide facts ``status`` reports."""

    state: str
    started: float
    socket: str
    activated: bool
    db: str
    last_event: float | None
    last_reconcile: ReconcileInfo | None
    drift_fixed_total: int
    indexing: dict[str, Any] | None
    writer_queue: int
    connections: int
    connections_refused: int
    index: dict[str, Any]
    extra: dict[str, Any]


class Core(Protocol):
    """What the core methods may ask of the daemon."""

    def roots(self) -> list[str]: ...

    def root_states(self) -> list[RootState]: ...

    def runtime(self) -> Runtime: ...

    def origin_of(self, root: str) -> str | None:
        """Where ``root`` came from, or None when it is not a root."""
        ...

    def root_for(self, directory: str) -> str | None: ...

    def ensure_dir(self, raw: Any) -> str: ...

    def reconcile(self, reason: str) -> SyncResult: ...

    def sync_tree(self, directory: str) -> SyncResult: ...

    def errors_under(self, dirs: list[str]) -> list[dict[str, Any]]: ...

    def watch(self, raw: Any) -> dict[str, Any]: ...

    def forget(self, root: str) -> int:
        """Stop watching ``root``, drop its rows; how many files were dropped."""
        ...

    def stop(self) -> None:
        """Stop being findable now, and stop the daemon a moment later."""
        ...


class DaemonCore:
    """:class:`Core` over a running :class:`~memoryd.daemon.app.Daemon`."""

    def __init__(self, daemon: Daemon) -> None:
        self._daemon = daemon
        self._counts: dict[str, tuple[int, float, tuple[int, int]]] = {}

    def roots(self) -> list[str]:
        return self._daemon.roots

    def _root_counts(self, root: str) -> tuple[int, int]:
        """Files and errors under ``root``, recounted when the writer has written since.

        A short age limit also catches writes by another process (``memoryd
        index`` on the same database), which do not bump the generation.
        """
        generation, now = self._daemon.writer.store.generation, time.monotonic()
        cached = self._counts.get(root)
        if cached is not None and cached[0] == generation and now - cached[1] < COUNTS_MAX_AGE:
            return cached[2]
        value = queries.counts_under(self._daemon.readers.conn(), root)
        self._counts[root] = (generation, now, value)
        return value

    def root_states(self) -> list[RootState]:
        daemon = self._daemon
        states = []
        for root in daemon.roots:
            entry = daemon.root_set.get(root)
            origin = entry.origin if entry else "none"
            forget_at = None
            if entry is not None and origin == "request":
                forget_at = entry.last_used + daemon.idle_seconds
            files, errors = self._root_counts(root)
            checker = daemon.staleness
            states.append(
                RootState(
                    path=root,
                    origin=origin,
                    forget_at=forget_at,
                    watcher=daemon.watcher.modes.get(root, "none"),
                    watcher_note=daemon.watcher.notes.get(root),
                    files=files,
                    errors=errors,
                    checkout=checker.checkout_of(root) if checker else None,
                )
            )
        return states

    def runtime(self) -> Runtime:
        d = self._daemon
        return Runtime(
            state=d.state,
            started=d.started,
            socket=str(d.cfg.socket),
            activated=d.activated,
            db=str(d.cfg.db_path),
            last_event=d.watcher.last_event,
            last_reconcile=d.last_reconcile,
            drift_fixed_total=d.drift_fixed_total,
            indexing=None if d.indexing is None else d.indexing.to_json(),
            writer_queue=d.writer.depth,
            connections=d.server.connections if d.server else 0,
            connections_refused=d.server.refused if d.server else 0,
            index=d.writer.health.to_json(),
            extra=dict(d.extra_status),
        )

    def origin_of(self, root: str) -> str | None:
        entry = self._daemon.root_set.get(root)
        return None if entry is None else entry.origin

    def root_for(self, directory: str) -> str | None:
        return self._daemon.root_for(directory)

    def ensure_dir(self, raw: Any) -> str:
        return self._daemon.ensure_dir(raw)

    def reconcile(self, reason: str) -> SyncResult:
        return self._daemon.reconcile(reason)

    def sync_tree(self, directory: str) -> SyncResult:
        return self._daemon.writer.call(lambda s: self._daemon.syncer(s).sync_tree(directory))

    def errors_under(self, dirs: list[str]) -> list[dict[str, Any]]:
        conn = self._daemon.readers.conn()
        return [e for d in dirs for e in queries.errors_under(conn, d)]

    def watch(self, raw: Any) -> dict[str, Any]:
        reply = self._daemon.watch_dir(raw)
        return {**reply, "watcher": self._daemon.watcher.modes.get(reply["root"] or "", "none")}

    def forget(self, root: str) -> int:
        return self._daemon.forget_root(root, reason="unwatch")

    def stop(self) -> None:
        # As dmypy does: stop being findable before saying yes, so a client
        # that starts a new daemon right after the reply never races us.
        self._daemon.release_paths()
        threading.Timer(0.05, self._daemon.stop_requested.set).start()
