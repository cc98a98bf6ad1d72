"""The in-process side of the CLI: what a command does itself when no daemon took its request.

This module pulls in the indexer, SQLite, YAML, the selector and the report
builder, which is most of memoryd's start-up cost. The CLI modules therefore
import it only inside the ``local`` callables they hand to
:func:`memoryd._cli_daemon.daemon_or_local` (and in ``memoryd index``, which
never asks a daemon), so a command answered by the daemon never loads it.

Each function opens the same index the daemon uses, brings the directories it
reads up to date, and returns the same JSON shape as the socket method.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sqlite3
from collections.abc import Callable, Iterator
from typing import Any

from memoryd import config as config_mod
from memoryd._cli_common import db_path
from memoryd.indexer import queries
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer, SyncResult
from memoryd.report import Retention, produce, report_params
from memoryd.select.selector import Selector
from memoryd.select.service import make_selector
from memoryd.service import MemoryService, StoreIndex
from memoryd.sessions import service
from memoryd.staleness.service import Checker, check_tree


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


def listing(args: argparse.Namespace, directory: str) -> dict[str, Any]:
    with local_store(args) as store:
        return MemoryService(StoreIndex(store), Selector()).list({"dir": directory})


def select(args: argparse.Namespace, params: dict[str, Any]) -> dict[str, Any]:
    cfg = config_mod.load()
    with local_store(args) as store:
        return dict(MemoryService(StoreIndex(store), make_selector(cfg)).select(params))


def stats(args: argparse.Namespace, params: dict[str, Any]) -> dict[str, Any]:
    with local_store(args) as store:
        return MemoryService(StoreIndex(store), Selector()).stats(params)


def save(args: argparse.Namespace, params: dict[str, Any]) -> dict[str, Any]:
    result = service.save(params)
    with local_store(args) as store:
        Syncer(store).sync_path(result["path"])
    return result


def load_last(args: argparse.Namespace, directory: str, project: str) -> dict[str, Any]:
    with local_store(args) as store:
        Syncer(store).sync_tree(directory)
        return service.load_last(
            store.conn, directory, str(service.project_param({"project": project}))
        )


def context(args: argparse.Namespace, params: dict[str, Any]) -> dict[str, Any]:
    task, raw, project, budget = service.context_params(params)
    with local_store(args) as store:
        for d in raw:
            Syncer(store).sync_tree(d)
        return service.context(
            store.conn, raw, task, project, budget, readable=service.dir_unreadable
        )


def _roots(store: IndexStore, cfg: config_mod.Config) -> list[str]:
    """The daemon's roots as it would pick them: the config's, the index's, else defaults."""
    raw = [*cfg.roots, *store.roots()] or config_mod.default_roots()
    real = (os.path.realpath(os.path.expanduser(r)) for r in raw)
    return [r for r in dict.fromkeys(real) if os.path.isdir(r)]


def report(args: argparse.Namespace, params: dict[str, Any]) -> dict[str, Any]:
    """A report of ``dir`` (or of every root), after indexing them incrementally."""
    cfg = config_mod.load()
    directory, older_than_s = report_params(params, cfg.report_older_than_days)
    with local_store(args) as store:
        dirs = [directory] if directory else _roots(store, cfg)
        syncer = Syncer(store)
        for d in dirs:
            syncer.sync_tree(d)
        return produce(store.conn, dirs, older_than_s, cfg.reports_dir, Retention.of(cfg))


def check(args: argparse.Namespace, directory: str) -> dict[str, Any]:
    """Run the staleness checks of ``directory`` now and store the verdicts."""
    cfg = config_mod.load()
    with local_store(args) as store:
        Syncer(store).sync_tree(directory)

        def write(fn: Callable[[sqlite3.Connection], None]) -> None:
            with store.transaction() as conn:
                fn(conn)

        return check_tree(Checker(cfg.checkouts), store.conn, directory, write)
