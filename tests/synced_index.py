"""A stand-in for the daemon's index, so the service's own rules are tested in milliseconds.

:class:`SyncedIndex` gives :class:`~memoryd.service.MemoryService` what the
daemon's index does, over one store in this thread: each directory synced as
it is asked for, a saved file indexed before the reply, writes done at once,
the runs kept in a list. :func:`reporter` is the daemon's own report writer
over that store. The daemon's index itself is tested through a daemon.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from memoryd import requests
from memoryd.config import Config
from memoryd.daemon.index import Readers
from memoryd.daemon.reporter import Reporter
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.select.telemetry import RunRecord


class SyncedIndex:
    """One store, each directory synced as it is asked for; runs kept in :attr:`runs`."""

    def __init__(self, store: IndexStore) -> None:
        self.store = store
        self.runs: list[RunRecord] = []

    def reader(self) -> sqlite3.Connection:
        return self.store.conn

    def directory(self, raw: str) -> str:
        path = requests.directory(raw)
        Syncer(self.store).sync_tree(path)
        return path

    def refuse_root(self, directory: str) -> None:
        """Nothing is refused here; the daemon's refusals are tested through a daemon."""

    def saved(self, raw_dir: str, path: str) -> tuple[str, str | None]:
        Syncer(self.store).sync_path(path)
        return requests.directory(raw_dir), None

    def write(self, fn: Callable[[sqlite3.Connection], None]) -> None:
        with self.store.transaction() as conn:
            fn(conn)

    def roots(self) -> list[str]:
        return []

    def record_run(self, record: RunRecord) -> None:
        self.runs.append(record)

    def runs_recorded(self) -> None:
        """Nothing to wait for: runs are kept as they are recorded."""


def reporter(cfg: Config, store: IndexStore) -> Reporter:
    """The daemon's report writer, reading ``store``'s file (never scheduled)."""
    return Reporter(cfg, lambda: [], Readers(store.path))
