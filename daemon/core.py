"""What the daemon's own socket methods ask of its parts, instead of the whole ``Daemon``.

``status``, ``reindex``, ``watch``, ``unwatch`` and ``shutdown`` are parse →
call → encode over a :class:`Core`: the roots and their counts, the runtime
facts ``status`` reports, and the root bookkeeping those methods change. It
keeps the per-root file counts cached by writer generation, so a busy
``status`` does not recount. Features add their own keys to ``status``
through :class:`StatusPart`.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from memoryd.file_entries import FileError
from memoryd.indexer import queries
from memoryd.indexer.sync import SyncResult
from memoryd.replies import FeatureStatus, IndexHealth, IndexingProgress, WatchReply

log = structlog.get_logger(__name__)

if TYPE_CHECKING:
    from memoryd.check_replies import CheckoutFound
    from memoryd.daemon.lifecycle import DaemonState, Lifecycle, Reload
    from memoryd.daemon.maintenance import Maintenance, ReconcileInfo
    from memoryd.daemon.readers import Readers
    from memoryd.daemon.roots import Origin
    from memoryd.daemon.staleness_checker import Staleness
    from memoryd.daemon.watched_roots import WatchedRoots
    from memoryd.daemon.watcher import Watcher
    from memoryd.daemon.writer import Writer
    from memoryd.ipc.server import Server

COUNTS_MAX_AGE = 2.0
"""Seconds a root's file counts may be reused by ``status`` when nothing was written."""


@dataclass(frozen=True)
class RootState:
    """One root as ``status`` shows it; ``checkout`` is None until a pass resolved one."""

    path: str
    origin: str
    forget_at: float | None
    watcher: str
    watcher_note: str | None
    files: int
    errors: int
    checkout: CheckoutFound | None
    recrawls: int = 0
    last_recrawl: ReconcileInfo | None = None


Listener = socket.socket


@dataclass(frozen=True)
class Where:
    """Where this daemon can be found, and how to stop being findable."""

    socket: str
    activated: bool
    """The listening socket came from systemd (socket activation), not from our bind."""
    db: str
    release: Callable[[], None]
    """Remove the socket file and the pidfile (``shutdown`` does so before it replies)."""
    rebind: Callable[[], Listener | None] = lambda: None
    """A new listening socket when ours can no longer be reached (its file deleted), else None."""


@dataclass(frozen=True)
class Runtime:
    """The process-wide facts ``status`` reports."""

    state: DaemonState
    started: float
    socket: str
    activated: bool
    db: str
    last_event: float | None
    last_reconcile: ReconcileInfo | None
    drift_fixed_total: int
    indexing: IndexingProgress | None
    writer_queue: int
    connections: int
    connections_refused: int
    index: IndexHealth
    extra: FeatureStatus
    last_reload: Reload | None


class StatusPart(Protocol):
    """A feature's share of ``status``: keys merged into the reply's top level."""

    def status(self) -> FeatureStatus: ...


class Core:
    """The roots, runtime facts and root bookkeeping of the daemon's own methods."""

    def __init__(
        self,
        life: Lifecycle,
        where: Where,
        *,
        roots: WatchedRoots,
        watcher: Watcher,
        writer: Writer,
        readers: Readers,
        maintenance: Maintenance,
        staleness: Staleness,
        server: Server,
        status_parts: Sequence[StatusPart],
    ) -> None:
        self._life = life
        self._where = where
        self._roots = roots
        self._watcher = watcher
        self._writer = writer
        self._readers = readers
        self._maintenance = maintenance
        self._staleness = staleness
        self._status_parts = status_parts
        self._server = server
        self._counts: dict[str, tuple[int, float, tuple[int, int]]] = {}

    def roots(self) -> list[str]:
        return self._roots.paths()

    def _root_counts(self, root: str) -> tuple[int, int]:
        """Files and errors under ``root``, recounted when the writer has written since.

        A short age limit also catches writes by another process (``memoryd
        index`` on the same database), which do not bump the generation.
        """
        generation, now = self._writer.store.generation, time.monotonic()
        cached = self._counts.get(root)
        if cached is not None and cached[0] == generation and now - cached[1] < COUNTS_MAX_AGE:
            return cached[2]
        value = queries.counts_under(self._readers.conn(), root)
        self._counts[root] = (generation, now, value)
        return value

    def root_states(self) -> list[RootState]:
        states = []
        for root in self._roots.paths():
            entry = self._roots.get(root)
            origin = entry.origin if entry else "none"
            forget_at = None
            if entry is not None and origin == "request":
                forget_at = entry.last_used + self._roots.idle_seconds
            files, errors = self._root_counts(root)
            mode, note = self._watcher.mode_of(root)
            recrawls = self._maintenance.recrawls.get(root)
            states.append(
                RootState(
                    path=root,
                    origin=origin,
                    forget_at=forget_at,
                    watcher=mode or "none",
                    watcher_note=note,
                    files=files,
                    errors=errors,
                    checkout=self._staleness.checkout_of(root),
                    recrawls=recrawls.count if recrawls else 0,
                    last_recrawl=recrawls.last if recrawls else None,
                )
            )
        return states

    def runtime(self) -> Runtime:
        maintenance, server = self._maintenance, self._server
        extra: FeatureStatus = {}
        for part in self._status_parts:
            try:
                extra.update(part.status())
            except Exception:  # one part's defect must not cost the whole status answer
                log.exception("status.part_failed", part=type(part).__name__)
        return Runtime(
            state=self._life.state,
            started=self._life.started,
            socket=self._where.socket,
            activated=self._where.activated,
            db=self._where.db,
            last_event=self._watcher.last_event,
            last_reconcile=maintenance.last_reconcile,
            drift_fixed_total=maintenance.drift_fixed_total,
            indexing=None if maintenance.indexing is None else maintenance.indexing.to_json(),
            writer_queue=self._writer.depth,
            connections=server.connections,
            connections_refused=server.refused,
            index=self._writer.health.to_json(),
            extra=extra,
            last_reload=self._life.last_reload,
        )

    def origin_of(self, root: str) -> Origin | None:
        """Where ``root`` came from, or None when it is not a root."""
        entry = self._roots.get(root)
        return None if entry is None else entry.origin

    def root_for(self, directory: str) -> str | None:
        return self._roots.root_for(directory)

    def ensure_dir(self, raw: Any) -> str:
        return self._roots.ensure_dir(raw)

    def reconcile(self, reason: str) -> SyncResult:
        return self._maintenance.reconcile(reason)

    def sync_tree(self, directory: str) -> SyncResult:
        return self._writer.call(lambda s: self._roots.syncer(s).sync_tree(directory))

    def errors_under(self, dirs: list[str]) -> list[FileError]:
        conn = self._readers.conn()
        return [e for d in dirs for e in queries.errors_under(conn, d)]

    def watch(self, raw: Any) -> WatchReply:
        found = self._roots.watch_dir(raw)
        mode, _ = self._watcher.mode_of(found["root"] or "")
        return {**found, "watcher": mode or "none"}

    def forget(self, root: str) -> int:
        """Stop watching ``root``, drop its rows; how many files were dropped."""
        return self._roots.forget(root, reason="unwatch")

    def stop(self) -> None:
        """Stop being findable now, and stop the daemon a moment later."""
        # As dmypy does: stop being findable before saying yes, so a client
        # that starts a new daemon right after the reply never races us.
        self._where.release()
        threading.Timer(0.05, self._life.stop_requested.set).start()
