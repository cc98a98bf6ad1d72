"""The in-process side of the CLI: what a command does itself when no daemon took its request.

This module pulls in the indexer, SQLite, YAML, the selector and the report
builder, which is most of memoryd's start-up cost. The CLI modules therefore
reach it only through :func:`memoryd.cli.daemon.daemon_or_local` (and in
``memoryd index``, which never asks a daemon), so a command answered by the
daemon never loads it.

:func:`call` answers any service method exactly as the daemon would, over
the same index file: the same :class:`~memoryd.service.MemoryService`, run
over a :class:`~memoryd.service.StoreIndex` that syncs each directory just
before it is read.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

from memoryd import config as config_mod
from memoryd.cli.common import db_path
from memoryd.indexer import queries
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer, SyncResult
from memoryd.select.selector import Selector
from memoryd.select.wiring import make_selector
from memoryd.service import LocalReports, MemoryService, StoreIndex
from memoryd.staleness.checks import Checker


@contextlib.contextmanager
def local_store(args: argparse.Namespace) -> Iterator[IndexStore]:
    store = IndexStore(db_path(args))
    try:
        yield store
    finally:
        store.close()


def index_dirs(store: IndexStore, dirs: list[str]) -> SyncResult:
    """Sync each directory and gather the totals, with the errors now in the index."""
    total = Syncer(store).sync_trees(dirs)
    total.errors = [e for d in dirs for e in queries.errors_under(store.conn, d)]
    return total


CONFIGURED = ("select", "report", "check")
"""Methods that read the config file (ranker, report settings, checkouts); others never do."""


def call(args: argparse.Namespace, method: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
    """Answer ``method`` in-process, on the index ``args`` names, as the daemon would."""
    cfg = config_mod.load() if method in CONFIGURED else None
    with local_store(args) as store:
        index = StoreIndex(store, cfg)
        if cfg is None:
            return MemoryService(index, Selector()).call(method, params)
        reports = LocalReports(index, cfg)
        service = MemoryService(index, make_selector(cfg), Checker(cfg.checkouts), reports)
        return service.call(method, params)
