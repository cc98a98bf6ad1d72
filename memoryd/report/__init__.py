"""Compaction reports: what a person or agent could condense, and what is unhealthy.

Built from the index alone and written as Markdown and JSON; no memory is ever deleted or
rewritten.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
import time
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

from memoryd.indexer.queries import IndexedFile, files_under, iso_utc
from memoryd.indexer.secrets import redact_value
from memoryd.report import findings as fx
from memoryd.report.files import Retention, write_report
from memoryd.report.render import NOTICE, SUMMARY_LABELS
from memoryd.staleness.results import stale_under

if TYPE_CHECKING:
    from memoryd.replies import ReportResult
    from memoryd.report.document import DirectoryReport, Report

__all__ = ["Retention", "build_report", "produce", "write_report"]


def _summary(dirs: list[DirectoryReport]) -> dict[str, int]:
    totals = dict.fromkeys((key for key, _ in SUMMARY_LABELS), 0)
    for d in dirs:
        totals["directories"] += 1
        totals["files"] += d["files"]
        totals["old_sessions"] += sum(g["count"] for g in d["old_sessions"])
        totals["condense_candidates"] += sum(len(g["superseded"]) for g in d["old_sessions"])
        totals["stale_work"] += len(d["stale_work"])
        totals["broken_files"] += len(d["broken_files"])
        totals["memory_index_issues"] += fx.issue_count(d["memory_index"])
        totals["duplicates"] += len(d["duplicates"])
        totals["superseded_memories"] += len(d["superseded_memories"])
        totals["secret_files"] += len(d["secrets"])
        totals["oversized"] += len(d["oversized"])
        if d["usage"] is not None:
            totals["never_selected"] += len(d["usage"]["never_selected"])
        totals["code_drift"] += len(d["code_drift"])
    return totals


def build_report(
    conn: sqlite3.Connection, dirs: list[str], older_than_s: float, now: float | None = None
) -> Report:
    """The report over every indexed directory in or below ``dirs``; ``older_than_s`` is the
    age of old sessions and the window of usage."""
    now = time.time() if now is None else now
    cutoff = now - older_than_s
    by_dir: dict[str, list[IndexedFile]] = defaultdict(list)
    for f in {f.path: f for root in dirs for f in files_under(conn, root)}.values():
        by_dir[f.directory].append(f)  # a file under two roots counted once
    # Only memories select can return can be "never selected" (the manifest `stats` uses).
    manifests = {d: [f.filename for f in fs if fx.selectable(f)] for d, fs in by_dir.items()}
    usage = fx.usage_by_dir(conn, manifests, cutoff)
    drift = {folder: stale for root in dirs for folder, stale in stale_under(conn, root).items()}
    reports: list[DirectoryReport] = []
    for directory in sorted(by_dir):
        files = by_dir[directory]
        found = fx.sessions_by_project(files)
        dups, superseded = fx.duplicates(files)
        reports.append(
            {
                "path": directory,
                "files": len(files),
                "bytes": sum(f.size for f in files),
                "old_sessions": fx.old_sessions(found, cutoff),
                "stale_work": fx.stale_work(found, cutoff, now),
                "broken_files": [
                    {"file": f.filename, "reason": f.error} for f in files if f.error is not None
                ],
                "memory_index": fx.index_health(directory, files),
                "duplicates": dups,
                "superseded_memories": superseded,
                "secrets": [
                    {
                        "file": f.filename,
                        "lines": [{"line": s["line"], "kind": s["kind"]} for s in f.secrets],
                    }
                    for f in files
                    if f.secrets
                ],
                "oversized": [
                    {"file": f.filename, **size}
                    for f in files
                    if (size := fx.oversize(f)) is not None
                ],
                "usage": usage.get(directory),
                "code_drift": drift.get(directory, []),
            }
        )
    report: Report = {
        "notice": NOTICE,
        "generated_at": iso_utc(now),
        "date": dt.datetime.fromtimestamp(now).strftime("%Y-%m-%d"),
        "stamp": dt.datetime.fromtimestamp(now).strftime("%Y-%m-%dT%H-%M-%S"),
        "older_than_days": round(older_than_s / fx.DAY, 3),
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
