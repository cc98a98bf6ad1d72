"""``memoryd why`` and ``memoryd eval``: what memoryd gave a session, and how it does on history.

Both only read: ``why`` the index (the running daemon's unless ``--db`` names one) with
the session's transcript; ``eval`` replays transcripts against a temporary index.
"""

from __future__ import annotations

import argparse
import os
from contextlib import closing
from pathlib import Path
from typing import Any

from memoryd.cli.common import memory_dir, show
from memoryd.cli.connect import probe


def register(sub: Any) -> None:
    w = sub.add_parser(
        "why", help="what memoryd injected for a session's last prompts, why, and what was used"
    )
    w.add_argument(
        "--dir",
        help="the memory folder (default: Claude Code's folder for the current directory)",
    )
    w.add_argument(
        "--session", help="a Claude Code session id (default: the folder's latest session)"
    )
    w.add_argument("--last", type=int, default=5, metavar="N", help="how many prompts (default: 5)")
    w.add_argument("--json", action="store_true", help="print the answer as JSON")
    w.add_argument(
        "--db",
        type=Path,
        default=None,
        help="the index database, read only (default: the daemon's, else $MEMORYD_DB or "
        "$XDG_STATE_HOME/memoryd/index.db)",
    )
    w.set_defaults(handler=cmd_why)

    e = sub.add_parser(
        "eval", help="precision and recall of select on your own Claude Code history"
    )
    e.add_argument(
        "--transcripts",
        type=Path,
        metavar="DIR",
        help="a folder of *.jsonl transcripts, or of project folders holding them "
        "(default: Claude Code's projects/ folder)",
    )
    e.add_argument(
        "--dir", help="score every transcript against this memory folder (default: each one's own)"
    )
    e.add_argument(
        "--ranker",
        action="append",
        choices=("local", "anthropic", "openai"),
        dest="rankers",
        help="a ranker to score (repeatable; default: local). A judge (anthropic, openai) is "
        "sent each labelled prompt with the local shortlist and must be configured",
    )
    e.add_argument("--json", action="store_true", help="print the answer as JSON")
    e.set_defaults(handler=cmd_eval)


def cmd_why(args: argparse.Namespace) -> int:
    from memoryd.claude_folders import memory_folder  # noqa: PLC0415
    from memoryd.indexer.store import open_reader  # noqa: PLC0415
    from memoryd.integrations import why  # noqa: PLC0415

    directory = memory_dir(args.dir or str(memory_folder(os.getcwd()).directory))
    status = None if args.db else probe(None)
    served = None if status is None else status["db"]
    with closing(open_reader(why.db_of(args.db, served))) as conn:
        report = why.explain(conn, directory, session=args.session, last=args.last)
    show(args, report, why.render)
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from memoryd import config as config_mod  # noqa: PLC0415
    from memoryd.claude_folders import claude_base  # noqa: PLC0415
    from memoryd.integrations import replay  # noqa: PLC0415
    from memoryd.integrations._transcript import transcripts_in  # noqa: PLC0415

    folder = args.transcripts or claude_base() / "projects"
    directory = None if args.dir is None else memory_dir(args.dir)
    report = replay.evaluate(
        transcripts_in(folder), config_mod.load(), args.rankers or ["local"], directory=directory
    )
    show(args, report, replay.render)
    return 0
