"""The operations memoryd answers, over the index they are given.

The daemon's socket handlers call a :class:`MemoryService`, through
:meth:`MemoryService.call` (params in, reply out), over its index
(:class:`MemoryIndex`: a read-only connection per request thread,
directories kept watched, writes queued for the writer thread). Params are parsed where a request
enters, into the typed requests of :mod:`memoryd.select.types` and
:mod:`memoryd.operations`; the features below never see a wire dict.

Each method's entry from the wire is ``cmd_<method>`` (params in, reply out),
found by name as dmypy's server finds its commands
(:func:`memoryd.methods.handler`): the daemon's one method table takes these
for every method this service answers.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar, cast

from memoryd import requests as p
from memoryd.config import Config
from memoryd.errors import MemorydError, UnknownMethod
from memoryd.indexer import queries
from memoryd.methods import handler
from memoryd.operations import (
    CheckRequest,
    ContextRequest,
    ListRequest,
    LoadLastRequest,
    ReportRequest,
    SaveRequest,
    parse_folder,
    parse_report,
)
from memoryd.replies import (
    CheckResult,
    ContextReply,
    ListReply,
    LoadLastReply,
    ReportResult,
    SaveResult,
    SelectResult,
    StatsReply,
)
from memoryd.report.findings import listing
from memoryd.select import telemetry
from memoryd.select.manifest import superseded_in
from memoryd.select.selector import Selector
from memoryd.select.types import StatsRequest, parse_select, parse_stats
from memoryd.select.wiring import run_stats, selector_settings
from memoryd.sessions import files as sessions
from memoryd.sessions.brief import ParsedSessions
from memoryd.sessions.format import project_case_note
from memoryd.staleness.checks import Checker, Write, check_tree
from memoryd.staleness.results import annotate_listing

R = TypeVar("R", bound=Mapping[str, Any])


class MemoryIndex(Protocol):
    """What the operations need of an index: readers, directories, writes, the roots."""

    def reader(self) -> sqlite3.Connection: ...

    def directory(self, raw: str) -> str:
        """``raw`` as a real directory whose index is (or is kept) up to date."""
        ...

    def refuse_root(self, directory: str) -> None:
        """Raise if a request may not use ``directory`` (the daemon's too-broad folders)."""
        ...

    def saved(self, raw_dir: str, path: str) -> tuple[str, str | None]:
        """Index the file a ``save`` just wrote, before the reply: its real directory, and a
        note when the index cannot be written now (the file is saved all the same)."""
        ...

    def write(self, fn: Callable[[sqlite3.Connection], None]) -> None:
        """Run ``fn`` in a write transaction (now, or queued for the writer thread)."""
        ...

    def roots(self) -> list[str]:
        """The folders a ``report`` of everything covers, up to date."""
        ...

    def record_run(self, record: telemetry.RunRecord) -> None: ...

    def runs_recorded(self) -> None:
        """Return once every run recorded so far can be read (``stats`` reads its own writes)."""
        ...


class Reports(Protocol):
    """Who writes reports: the daemon's reporter (one at a time, in ``status``)."""

    def default_older_than_s(self) -> float: ...

    def run(self, dirs: list[str], older_than_s: float, trigger: str) -> ReportResult: ...


def _noted(result: R, project_given: object) -> R:
    """``result`` with ``notes`` saying so when a capitalised project name was lowercased."""
    note = project_case_note(project_given)
    notes = [*result.get("notes", []), note]
    return cast(R, {**result, "notes": notes}) if note else result


class MemoryService:
    """One method per operation over one index; :meth:`call` is the entry from the wire."""

    def __init__(
        self,
        index: MemoryIndex,
        selector: Selector,
        checker: Checker | None = None,
        reports: Reports | None = None,
    ) -> None:
        self.index = index
        self.selector = selector
        self.checker = checker or Checker()
        self.reports = reports
        self.parsed_sessions = ParsedSessions()

    def reconfigure(self, cfg: Config) -> None:
        """SIGHUP: the selector takes the new query logging, judges and shortlist."""
        self.selector.reconfigure(**selector_settings(cfg))

    def index_replaced(self) -> None:
        """The index was rebuilt (after damage): what was cached from the old one goes."""
        self.selector.index_replaced()

    def call(self, method: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """Parse ``params`` into ``method``'s typed request and answer it (the CLI's fallback)."""
        entry = handler(self, method)
        if entry is None:
            raise UnknownMethod(f"unknown method {method!r}")
        result: Mapping[str, Any] = entry(params)
        return result

    def cmd_select(self, params: Mapping[str, Any]) -> SelectResult:
        """Parse, resolve, select and record one telemetry row; errors are recorded, then raised.

        Parsing happens inside the recorded span, so a refused request still
        leaves its row (``error: invalid_params``).
        """
        started = time.perf_counter()
        run_id = uuid.uuid4().hex[:16]  # the 16 hex digits run ids have always had
        raw_query = params.get("query")
        query = raw_query if isinstance(raw_query, str) else ""
        session = params.get("session_id")
        directory: str | None = None

        def record(**fields: Any) -> None:
            run = telemetry.make_record(
                run_id=run_id,
                directory=directory,
                query=query,
                log_queries=self.selector.log_queries,
                latency_ms=(time.perf_counter() - started) * 1000,
                session_id=session if isinstance(session, str) else None,
                **fields,
            )
            telemetry.emit(run)
            self.index.record_run(run)

        arrived = time.monotonic()
        try:
            req = parse_select(params)
            directory = self.index.directory(req.dir)
            # The client's wait started when the request came, not when its folder was ready.
            deadline = None if req.timeout_ms is None else arrived + req.timeout_ms / 1000
            selection = self.selector.run(
                self.index.reader(), req, directory, run_id, deadline=deadline
            )
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
            judge=selection.judge,
            shortlist=selection.shortlist,
            judge_ms=selection.judge_ms,
            scores=[s["score"] for s in result["selected"]],
            left=selection.left_out,
        )
        return result

    def cmd_stats(self, params: Mapping[str, Any]) -> StatsReply:
        return self.stats(parse_stats(params))

    def stats(self, request: StatsRequest) -> StatsReply:
        self.index.runs_recorded()
        return run_stats(self.index.reader(), request)

    def cmd_list(self, params: Mapping[str, Any]) -> ListReply:
        return self.list(parse_folder(params, ListRequest))

    def list(self, request: ListRequest) -> ListReply:
        """Every file in or below ``dir`` (stale and oversized memories marked), and failures."""
        directory = self.index.directory(request.dir)
        conn = self.index.reader()
        files = queries.files_under(conn, directory)
        return annotate_listing(conn, listing(files, directory, superseded_in(files)))

    def cmd_save(self, params: Mapping[str, Any]) -> SaveResult:
        return self.save(sessions.parse_save(params))

    def save(self, request: SaveRequest) -> SaveResult:
        """Write a session memory, index it, and say where; every refusal comes first."""
        self.index.refuse_root(request.dir)
        result = sessions.save(request)
        # Indexed before the reply, so a load_last right after it sees the file.
        result["dir"], pending = self.index.saved(request.raw_dir, result["path"])
        if pending is not None:
            result["index_pending"] = True
            result["notes"] = [pending]
        return _noted(result, request.project_given)

    def cmd_load_last(self, params: Mapping[str, Any]) -> LoadLastReply:
        return self.load_last(sessions.parse_load_last(params))

    def load_last(self, request: LoadLastRequest) -> LoadLastReply:
        directory = self.index.directory(request.dir)
        found = sessions.load_last(
            self.index.reader(), directory, request.project, reveal_secrets=request.reveal_secrets
        )
        return _noted(found, request.project_given)

    def cmd_context(self, params: Mapping[str, Any]) -> ContextReply:
        return self.context(sessions.parse_context(params))

    def context(self, request: ContextRequest) -> ContextReply:
        dirs = [p.directory(d) for d in request.dirs]
        # An unreadable history is reported in the brief ("unavailable"), so
        # only readable directories are watched and indexed.
        if not any(sessions.dir_unreadable(d) for d in dirs):
            dirs = [self.index.directory(d) for d in dirs]
        brief = sessions.context(
            self.index.reader(),
            dirs,
            request.task,
            request.project,
            request.budget_tokens,
            parsed=self.parsed_sessions,
        )
        return _noted(brief, request.project_given)

    def cmd_report(self, params: Mapping[str, Any]) -> ReportResult:
        return self.report(parse_report(params))

    def report(self, request: ReportRequest) -> ReportResult:
        """Write a report of ``dir``, or of every root, now."""
        if self.reports is None:
            raise RuntimeError("this service was built without a report writer")
        dirs = self.index.roots() if request.dir is None else [self.index.directory(request.dir)]
        older = request.older_than_s
        if older is None:
            older = self.reports.default_older_than_s()
        return self.reports.run(dirs, older, "request")

    def cmd_check(self, params: Mapping[str, Any]) -> CheckResult:
        return self.check(parse_folder(params, CheckRequest))

    def check(self, request: CheckRequest) -> CheckResult:
        """Re-check every citing memory in or below ``dir`` against its checkout now.

        Session files whose stamp is more than a day ahead come back as ``findings``.
        """
        directory = self.index.directory(request.dir)
        write: Write = self.index.write
        result = check_tree(self.checker, self.index.reader(), directory, write)
        findings = sessions.stamp_findings(self.index.reader(), directory)
        return {**result, "findings": findings} if findings else result
