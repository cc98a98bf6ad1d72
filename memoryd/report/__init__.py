"""Compaction reports: what a person or agent could condense, and what is unhealthy.

Memory folders only grow, and agents' own clean-up jobs have deleted people's
files. memoryd therefore never deletes or rewrites a memory: it reads the
index and writes a report (Markdown to read, JSON to act on) listing old
sessions worth condensing, stale work, broken files, MEMORY.md problems,
duplicates, files that look like they hold credentials, memories too big for
the hook to show whole, and — when selector
telemetry exists — what was never or most often selected.

The daemon writes one on a schedule; ``memoryd report`` and the ``report``
socket method write one on demand. Both call :func:`build_report` then
:func:`~memoryd.report.files.write_report` (time-named files, a ``latest``
link, pruning by count and age).
"""

from __future__ import annotations

import datetime as dt
import sqlite3
import time
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

from memoryd.indexer.queries import IndexedFile, files_under, iso_utc
from memoryd.indexer.records import KIND_MEMORY
from memoryd.indexer.secrets import redact_value
from memoryd.report import findings, memory_index, oversize, sessions
from memoryd.report.files import Retention, write_report
from memoryd.report.render import NOTICE
from memoryd.staleness.results import stale_under

if TYPE_CHECKING:
    from memoryd.replies import ReportResult
    from memoryd.report.document import DirectoryReport, Report

__all__ = ["Retention", "build_report", "produce", "write_report"]

SUMMARY_KEYS = (
    "directories",
    "files",
    "old_sessions",
    "condense_candidates",
    "stale_work",
    "broken_files",
    "memory_index_issues",
    "duplicates",
    "superseded_memories",
    "secret_files",
    "oversized",
    "never_selected",
    "code_drift",
)


def _directory_report(
    directory: str, files: list[IndexedFile], cutoff: float, now: float
) -> DirectoryReport:
    found = sessions.sessions_of(files)
    dups, superseded = findings.duplicates(files)
    return {
        "path": directory,
        "files": len(files),
        "bytes": sum(f.size for f in files),
        "old_sessions": sessions.old_sessions(found, cutoff),
        "stale_work": sessions.stale_work(found, cutoff, now),
        "broken_files": findings.broken_files(files),
        "memory_index": memory_index.index_health(directory, files),
        "duplicates": dups,
        "superseded_memories": superseded,
        "secrets": findings.secret_files(files),
        "oversized": oversize.oversized(files),
        "usage": None,
    }


def _summary(dirs: list[DirectoryReport]) -> dict[str, int]:
    totals = dict.fromkeys(SUMMARY_KEYS, 0)
    for d in dirs:
        totals["directories"] += 1
        totals["files"] += d["files"]
        totals["old_sessions"] += sum(g["count"] for g in d["old_sessions"])
        totals["condense_candidates"] += sum(len(g["superseded"]) for g in d["old_sessions"])
        totals["stale_work"] += len(d["stale_work"])
        totals["broken_files"] += len(d["broken_files"])
        totals["memory_index_issues"] += memory_index.issue_count(d["memory_index"])
        totals["duplicates"] += len(d["duplicates"])
        totals["superseded_memories"] += len(d["superseded_memories"])
        totals["secret_files"] += len(d["secrets"])
        totals["oversized"] += len(d["oversized"])
        if d["usage"] is not None:
            totals["never_selected"] += len(d["usage"]["never_selected"])
        totals["code_drift"] += len(d["code_drift"])
    return totals


def _selectable(f: IndexedFile) -> bool:
    return f.kind == KIND_MEMORY and f.error is None


def build_report(
    conn: sqlite3.Connection, dirs: list[str], older_than_s: float, now: float | None = None
) -> Report:
    """The report over every indexed directory in or below ``dirs``.

    ``older_than_s`` is both the age past which sessions count as old or
    stale and the telemetry window for usage.
    """
    now = time.time() if now is None else now
    cutoff = now - older_than_s
    by_dir: dict[str, list[IndexedFile]] = defaultdict(list)
    seen: set[str] = set()
    for root in dirs:
        for f in files_under(conn, root):
            if f.path not in seen:
                seen.add(f.path)
                by_dir[f.directory].append(f)
    reports = [_directory_report(d, by_dir[d], cutoff, now) for d in sorted(by_dir)]
    # Only memories select can return can be "never selected" (the same
    # manifest `stats` uses); broken files are reported as broken instead.
    manifests = {
        r["path"]: [f.filename for f in by_dir[r["path"]] if _selectable(f)] for r in reports
    }
    usage = findings.usage_by_dir(conn, manifests, cutoff)
    drift = {folder: stale for root in dirs for folder, stale in stale_under(conn, root).items()}
    for r in reports:
        r["usage"] = usage.get(r["path"])
        r["code_drift"] = drift.get(r["path"], [])
    report: Report = {
        "notice": NOTICE,
        "generated_at": iso_utc(now),
        "date": dt.datetime.fromtimestamp(now).strftime("%Y-%m-%d"),
        "stamp": dt.datetime.fromtimestamp(now).strftime("%Y-%m-%dT%H-%M-%S"),
        "older_than_days": round(older_than_s / sessions.DAY, 3),
        "roots": list(dirs),
        "summary": _summary(reports),
        "directories": reports,
    }
    redacted: Report = redact_value(report)
    return redacted


def produce(
    conn: sqlite3.Connection,
    dirs: list[str],
    older_than_s: float,
    reports_dir: Path,
    retention: Retention | None = None,
) -> ReportResult:
    """Build and write one report; the answer of ``report`` (paths and counts, not the body)."""
    report = build_report(conn, dirs, older_than_s)
    md_path, json_path = write_report(report, reports_dir, retention)
    return {
        "at": report["generated_at"],
        "path": str(md_path),
        "json": str(json_path),
        "roots": report["roots"],
        "summary": report["summary"],
    }
