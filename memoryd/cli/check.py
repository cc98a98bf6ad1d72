"""``memoryd check DIR`` and ``memoryd report``: memories' health, never changing them.

``check`` exits 0 whatever it finds unless ``--fail-on`` (or ``--strict``) names what
should fail a git hook or a CI job; ``report`` has the daemon write its report now.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from memoryd.cli.common import asks_daemon, show
from memoryd.cli.connect import answered, ask
from memoryd.cli.flags import add_params, wire_params
from memoryd.staleness.render import render_check

if TYPE_CHECKING:
    from memoryd.check_replies import CheckResult
    from memoryd.replies import ReportResult


def register(sub: Any) -> None:
    c = sub.add_parser(
        "check", help="check memories against the code they cite (never changes memories)"
    )
    add_params(c, "check", "dir")
    fail = c.add_mutually_exclusive_group()
    fail.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        help="exit 1 when a memory cites a missing or renamed path (gone), "
        "or also a path changed since it was written (stale)",
    )
    fail.add_argument("--strict", action="store_true", help="the same as --fail-on stale")
    asks_daemon(c, cmd_check)

    r = sub.add_parser(
        "report", help="write a compaction and memory-health report now (never changes memories)"
    )
    add_params(r, "report")
    asks_daemon(r, answered("report", describe))


FAIL_ON = ("gone", "stale")


def failing(result: CheckResult, fail_on: str | None) -> bool:
    """Whether ``result`` (a ``check`` answer) holds what ``fail_on`` names."""
    if fail_on == "stale":
        return bool(result["stale"])
    if fail_on == "gone":
        verdicts = (v for m in result["memories"] if (v := m.get("staleness")))
        return any(v["missing"] or v["renamed"] for v in verdicts)
    return False


def cmd_check(args: argparse.Namespace) -> int:
    result: CheckResult = ask(args, "check", wire_params(args, "check"))
    show(args, result, render_check)
    return 1 if failing(result, "stale" if args.strict else args.fail_on) else 0


def describe(result: ReportResult) -> str:
    """A few lines for a terminal: where the report is, and what it found."""
    from memoryd.report import render  # noqa: PLC0415 - the report builder: not for --json

    counts = result["summary"]
    found = [
        f"  {counts[key]:>6}  {label}"
        for key, label in render.SUMMARY_LABELS
        if key in ("directories", "files") or counts[key]
    ]
    return "\n".join(
        [render.NOTICE, f"report: {result['path']}", f"json:   {result['json']}", *found]
    )
