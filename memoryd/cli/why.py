"""``memoryd why`` and ``memoryd eval``: what memoryd gave a session, and how it does on history.

Both only read: ``why`` opens the index read-only (the running daemon's,
found through ``status``, unless ``--db`` names one) with the session's
Claude Code transcript; ``eval`` replays transcripts against a temporary
index of each memory folder. Their work is in
:mod:`memoryd.integrations.why` and :mod:`memoryd.integrations.replay`,
loaded only when the command runs.
"""

from __future__ import annotations

import argparse
import os
from contextlib import closing
from pathlib import Path
from typing import Any

from memoryd.cli.common import add_db_option, memory_dir, show
from memoryd.errors import MemorydError


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
    add_db_option(
        w,
        "the index database, read only (default: the daemon's, else $MEMORYD_DB or "
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


def _daemon_db() -> str | None:
    """The running daemon's index path, or None when no daemon answers."""
    from memoryd.ipc.client import Client  # noqa: PLC0415

    try:
        with Client(timeout=2) as client:
            db = client.status().get("db")
    except MemorydError:
        return None
    return db if isinstance(db, str) else None


def cmd_why(args: argparse.Namespace) -> int:
    from memoryd.claude_folders import memory_folder  # noqa: PLC0415
    from memoryd.indexer.store import open_reader  # noqa: PLC0415
    from memoryd.integrations import why  # noqa: PLC0415

    folder = args.dir or str(memory_folder(os.getcwd()).directory)
    directory = memory_dir(folder)
    with closing(open_reader(why.db_of(args.db, None if args.db else _daemon_db()))) as conn:
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
