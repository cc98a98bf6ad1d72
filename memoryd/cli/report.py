"""``memoryd report``: the daemon writes a compaction report now, into its reports folder."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memoryd.cli.common import asks_daemon
from memoryd.cli.connect import answered
from memoryd.cli.flags import add_params

if TYPE_CHECKING:
    from memoryd.replies import ReportResult


def register(sub: Any) -> None:
    r = sub.add_parser(
        "report", help="write a compaction and memory-health report now (never changes memories)"
    )
    add_params(r, "report")
    asks_daemon(r, answered("report", describe))


def describe(result: ReportResult) -> str:
    """A few lines for a terminal: where the report is, and what it found.

    The labels live with the report builder, which is loaded here and not at
    start-up: a report takes seconds anyway, and ``--json`` never needs them.
    """
    from memoryd.report import render  # noqa: PLC0415

    counts = result["summary"]
    found = [
        f"  {counts[key]:>6}  {label}"
        for key, label in render.SUMMARY_LABELS
        if key in ("directories", "files") or counts[key]
    ]
    return "\n".join(
        [render.NOTICE, f"report: {result['path']}", f"json:   {result['json']}", *found]
    )
