"""The operations memoryd answers, over the index they are given.

Each method's entry is ``cmd_<method>``, taking the method's declaration (:mod:`memoryd.methods`)
and returning its reply; :func:`memoryd.methods.handler` finds it by name and decodes the params.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar, cast

from memoryd import requests as p
from memoryd.check_replies import CheckResult
from memoryd.config import Config
from memoryd.errors import InvalidParams, MemorydError
from memoryd.indexer import queries
from memoryd.methods import Check, Context, List, LoadLast, Report, Save, Select, Stats
from memoryd.params import parse_duration
from memoryd.replies import (
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
from memoryd.select.telemetry import Selection
from memoryd.select.wiring import run_stats, selector_settings
from memoryd.sessions import files as sessions
from memoryd.sessions.brief import ParsedSessions
from memoryd.sessions.format import check_project, project_case_note
from memoryd.staleness.checks import Checker, Write, check_tree
from memoryd.staleness.results import annotate_listing

R = TypeVar("R", bound=Mapping[str, Any])


class MemoryIndex(Protocol):
    """What the operations need of the daemon's index."""

    def reader(self) -> sqlite3.Connection: ...

    def directory(self, raw: str) -> str:
        """``raw`` as a real directory whose index is kept up to date."""
        ...

    def refuse_root(self, directory: str) -> None: ...

    def saved(self, raw_dir: str, path: str) -> tuple[str, str | None]:
        """Index the file a ``save`` just wrote, before the reply: its real directory, and a
        note when the index cannot be written now (the file is saved all the same)."""
        ...

    def write(self, fn: Callable[[sqlite3.Connection], None]) -> None: ...

    def roots(self) -> list[str]: ...

    def record_run(self, record: telemetry.RunRecord) -> None: ...

    def runs_recorded(self) -> None:
        """Return once every run recorded so far can be read (``stats`` reads its own writes)."""
        ...


class Reports(Protocol):
    """The daemon's reporter."""

    def default_older_than_s(self) -> float: ...

    def run(self, dirs: list[str], older_than_s: float, trigger: str) -> ReportResult: ...


def _noted(result: R, project_given: object) -> R:
    """``result`` with ``notes`` saying so when a capitalised project name was lowercased."""
    note = project_case_note(project_given)
    notes = [*result.get("notes", []), note]
    return cast(R, {**result, "notes": notes}) if note else result


class MemoryService:
    """One ``cmd_<method>`` per operation over one index."""

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

    def refused(self, method: str, params: Mapping[str, Any], error: InvalidParams) -> None:
        """A request whose params were refused: a ``select`` still leaves its telemetry row."""
        if method == "select":
            query, session = params.get("query"), params.get("session_id")
            req = Select(
                query if isinstance(query, str) else "",
                "",
                session_id=session if isinstance(session, str) else None,
            )
            self._record(time.perf_counter(), uuid.uuid4().hex[:16], req, None, error=error.code)

    def _record(
        self,
        started: float,
        run_id: str,
        req: Select,
        directory: str | None,
        *,
        selection: Selection | None = None,
        error: str | None = None,
    ) -> None:
        run = telemetry.make_record(
            run_id=run_id,
            directory=directory,
            query=req.query,
            session_id=req.session_id,
            log_queries=self.selector.log_queries,
            latency_ms=(time.perf_counter() - started) * 1000,
            selection=selection,
            error=error,
        )
        telemetry.emit(run)
        self.index.record_run(run)

    def cmd_select(self, req: Select) -> SelectResult:
        """Resolve, select and record one telemetry row; errors are recorded, then raised."""
        started = time.perf_counter()
        run_id = uuid.uuid4().hex[:16]
        directory: str | None = None
        arrived = time.monotonic()
        try:
            directory = self.index.directory(req.dir)
            # The client's wait started when the request came, not when its folder was ready.
            deadline = None if req.timeout_ms is None else arrived + req.timeout_ms / 1000
            selection = self.selector.run(
                self.index.reader(), req, directory, run_id, deadline=deadline
            )
        except MemorydError as exc:
            error = getattr(exc, "code", type(exc).__name__)
            self._record(started, run_id, req, directory, error=error)
            raise
        except Exception:
            self._record(started, run_id, req, directory, error="internal")
            raise
        result = selection.result
        result["latency_ms"] = round((time.perf_counter() - started) * 1000, 3)
        self._record(started, run_id, req, directory, selection=selection)
        return result

    def cmd_stats(self, req: Stats) -> StatsReply:
        self.index.runs_recorded()
        return run_stats(self.index.reader(), parse_duration(req.since, "since"))

    def cmd_list(self, req: List) -> ListReply:
        """Every file in or below ``dir`` (stale and oversized memories marked), and failures."""
        directory = self.index.directory(req.dir)
        conn = self.index.reader()
        files = queries.files_under(conn, directory)
        return annotate_listing(conn, listing(files, directory, superseded_in(files)))

    def cmd_save(self, req: Save) -> SaveResult:
        """Write a session memory, index it, and say where; every refusal comes first."""
        request = sessions.save_request(req)
        self.index.refuse_root(request.dir)
        result = sessions.save(request)
        # Indexed before the reply, so a load_last right after it sees the file.
        result["dir"], pending = self.index.saved(req.dir, result["path"])
        if pending is not None:
            result["index_pending"] = True
            result["notes"] = [pending]
        return _noted(result, req.project)

    def cmd_load_last(self, req: LoadLast) -> LoadLastReply:
        project = check_project(req.project)
        directory = self.index.directory(req.dir)
        found = sessions.load_last(
            self.index.reader(), directory, project, reveal_secrets=req.reveal_secrets
        )
        return _noted(found, req.project)

    def cmd_context(self, req: Context) -> ContextReply:
        project = None if req.project is None else check_project(req.project)
        dirs = [p.directory(d) for d in req.dir]
        # An unreadable history is reported in the brief ("unavailable"), so
        # only readable directories are watched and indexed.
        if not any(sessions.dir_unreadable(d) for d in dirs):
            dirs = [self.index.directory(d) for d in dirs]
        brief = sessions.context(
            self.index.reader(),
            dirs,
            req.task,
            project,
            req.budget_tokens,
            parsed=self.parsed_sessions,
        )
        return _noted(brief, req.project)

    def cmd_report(self, req: Report) -> ReportResult:
        """Write a report of ``dir``, or of every root, now."""
        if self.reports is None:
            raise RuntimeError("this service was built without a report writer")
        older = None if req.older_than is None else parse_duration(req.older_than, "older_than")
        dirs = self.index.roots() if req.dir is None else [self.index.directory(req.dir)]
        if older is None:
            older = self.reports.default_older_than_s()
        return self.reports.run(dirs, older, "request")

    def cmd_check(self, req: Check) -> CheckResult:
        """Re-check every citing memory in or below ``dir`` now; future-dated sessions are
        ``findings``."""
        directory = self.index.directory(req.dir)
        write: Write = self.index.write
        result = check_tree(self.checker, self.index.reader(), directory, write)
        findings = sessions.stamp_findings(self.index.reader(), directory)
        return {**result, "findings": findings} if findings else result
