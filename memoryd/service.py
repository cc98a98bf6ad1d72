"""The operations memoryd answers, written once for the daemon and the CLI.

Socket handlers and the CLI's in-process fallback both call a
:class:`MemoryService`; what differs between them is only the index it runs
over (:class:`MemoryIndex`): the daemon's (a read-only connection per request
thread, directories kept watched, telemetry queued for the writer thread) or
the CLI's :class:`StoreIndex` (one local store, each directory synced just
before it is read). Params are parsed here, where a request enters, into the
typed requests of :mod:`memoryd.select.types`; the features below never see a
wire dict.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Mapping
from typing import Any, Protocol

from memoryd.errors import MemorydError
from memoryd.indexer import queries
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.ipc import params as p
from memoryd.select import telemetry
from memoryd.select.manifest import superseded_in
from memoryd.select.selector import Selector
from memoryd.select.service import record_run, run_stats
from memoryd.select.types import SelectResult, parse_list, parse_select, parse_stats
from memoryd.staleness.results import annotate_listing


class MemoryIndex(Protocol):
    """What the operations need of an index: a reader, current directories, a run log."""

    def reader(self) -> sqlite3.Connection: ...

    def directory(self, raw: str) -> str:
        """``raw`` as a real directory whose index is (or is kept) up to date."""
        ...

    def record_run(self, record: dict[str, Any]) -> None: ...

    def runs_recorded(self) -> None:
        """Return once every run recorded so far can be read (``stats`` reads its own writes)."""
        ...


class StoreIndex:
    """The CLI's index: one local store, each directory synced just before it is read."""

    def __init__(self, store: IndexStore) -> None:
        self.store = store

    def reader(self) -> sqlite3.Connection:
        return self.store.conn

    def directory(self, raw: str) -> str:
        path = p.directory(raw)
        Syncer(self.store).sync_tree(path)
        return path

    def record_run(self, record: dict[str, Any]) -> None:
        record_run(self.store, record)

    def runs_recorded(self) -> None:
        """Nothing to wait for: runs are written as they are recorded."""


class MemoryService:
    """``select``, ``stats`` and ``list`` over one index, each parsing its own params."""

    def __init__(self, index: MemoryIndex, selector: Selector) -> None:
        self.index = index
        self.selector = selector

    def select(self, params: Mapping[str, Any]) -> SelectResult:
        """Parse, resolve, select and record one telemetry row; errors are recorded, then raised.

        Parsing happens inside the recorded span, so a refused request still
        leaves its row (``error: invalid_params``).
        """
        started = time.perf_counter()
        run_id = uuid.uuid4().hex[:16]
        raw_query = params.get("query")
        query = raw_query if isinstance(raw_query, str) else ""
        directory: str | None = None

        def record(**fields: Any) -> None:
            run = telemetry.make_record(
                run_id=run_id,
                directory=directory,
                query=query,
                log_queries=self.selector.log_queries,
                latency_ms=(time.perf_counter() - started) * 1000,
                **fields,
            )
            telemetry.emit(run)
            self.index.record_run(run)

        try:
            req = parse_select(params)
            directory = self.index.directory(req.dir)
            selection = self.selector.run(self.index.reader(), req, directory, run_id)
        except MemorydError as exc:
            record(ranker=None, error=getattr(exc, "code", type(exc).__name__))
            raise
        except Exception:
            record(ranker=None, error="internal")
            raise
        result = selection.result
        result["latency_ms"] = round((time.perf_counter() - started) * 1000, 3)
        record(
            ranker=result["ranker"],
            fallback=result["fallback"],
            candidates=result["candidates"],
            excluded=result["excluded"],
            selected=[s["filename"] for s in result["selected"]],
            dropped_unknown=result["dropped_unknown"],
            tokens_in=selection.tokens[0],
            tokens_out=selection.tokens[1],
        )
        return result

    def stats(self, params: Mapping[str, Any]) -> dict[str, Any]:
        request = parse_stats(params)
        self.index.runs_recorded()
        return run_stats(self.index.reader(), request)

    def list(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Every file in or below ``dir``, stale memories marked, with the files that failed."""
        directory = self.index.directory(parse_list(params).dir)
        conn = self.index.reader()
        files = queries.files_under(conn, directory)
        return annotate_listing(conn, queries.listing(files, directory, superseded_in(files)))
