"""``memoryd check DIR``: check what a folder's memories cite against their checkout now.

Through the daemon when one answers (its verdicts are stored and its
``select`` results carry them), in-process otherwise. Exit 0 whatever is
found, so it can be run for information; ``--strict`` exits 1 when any
memory is stale, for a git hook or a CI job.
"""

from __future__ import annotations

import argparse
from typing import Any

from memoryd._cli_common import add_db_option, memory_dir, print_json
from memoryd._cli_daemon import add_socket_options, daemon_or_local
from memoryd.staleness.render import render_check


def register(sub: Any) -> None:
    c = sub.add_parser(
        "check", help="check memories against the code they cite (never changes memories)"
    )
    c.add_argument("dir", metavar="DIR", help="memory directory (and the folders below it)")
    c.add_argument("--json", action="store_true", help="print the answer as JSON")
    c.add_argument("--strict", action="store_true", help="exit 1 when any memory is stale")
    add_db_option(c)
    add_socket_options(c, fallback=True)
    c.set_defaults(handler=cmd_check)


def cmd_check(args: argparse.Namespace) -> int:
    directory = memory_dir(args.dir)

    result = daemon_or_local(args, "check", {"dir": directory})
    if args.json:
        print_json(result)
    else:
        print(render_check(result))
    return 1 if args.strict and result["stale"] else 0
