"""``memoryd check DIR``: what a folder's memories cite, checked against their checkout now.

Exit 0 whatever is found, unless ``--fail-on`` (or ``--strict``) names what
should fail a git hook or a CI job.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from memoryd.cli.common import asks_daemon, show
from memoryd.cli.connect import ask
from memoryd.cli.flags import add_params, wire_params
from memoryd.staleness.render import render_check

if TYPE_CHECKING:
    from memoryd.replies import CheckResult


def register(sub: Any) -> None:
    c = sub.add_parser(
        "check", help="check memories against the code they cite (never changes memories)"
    )
    add_params(c, "check", dir={"flag": "dir", "metavar": "DIR"})
    fail = c.add_mutually_exclusive_group()
    fail.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        help="exit 1 when a memory cites a missing or renamed path (gone), "
        "or also a path changed since it was written (stale)",
    )
    fail.add_argument("--strict", action="store_true", help="the same as --fail-on stale")
    asks_daemon(c, cmd_check)


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
