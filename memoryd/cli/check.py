"""``memoryd check DIR``: check what a folder's memories cite against their checkout now.

Through the daemon (its verdicts are stored and its ``select`` results
carry them). Exit 0 whatever is
found, so it can be run for information. For a git hook or a CI job,
``--fail-on gone`` exits 1 when a memory cites a path that is missing or was
renamed (the memory now points at nothing), and ``--fail-on stale`` (or
``--strict``) also when a cited path merely changed since the memory was
written, which an active codebase does all day.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from memoryd.cli.common import add_db_option, add_socket_options, memory_dir, print_json
from memoryd.cli.connect import ask
from memoryd.cli.flags import wire_params
from memoryd.staleness.render import render_check

if TYPE_CHECKING:
    from memoryd.check_replies import CheckResult


def register(sub: Any) -> None:
    c = sub.add_parser(
        "check", help="check memories against the code they cite (never changes memories)"
    )
    c.add_argument("dir", metavar="DIR", help="memory directory (and the folders below it)")
    c.add_argument("--json", action="store_true", help="print the answer as JSON")
    fail = c.add_mutually_exclusive_group()
    fail.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        help="exit 1 when a memory cites a missing or renamed path (gone), "
        "or also a path changed since it was written (stale)",
    )
    fail.add_argument("--strict", action="store_true", help="the same as --fail-on stale")
    add_db_option(c)
    add_socket_options(c)
    c.set_defaults(handler=cmd_check)


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
    directory = memory_dir(args.dir)

    result: CheckResult = ask(args, "check", wire_params(args, "check", dir=directory))
    if args.json:
        print_json(result)
    else:
        print(render_check(result))
    return 1 if failing(result, "stale" if args.strict else args.fail_on) else 0
