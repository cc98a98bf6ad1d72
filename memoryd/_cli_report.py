"""``memoryd report``: write a compaction report now, through the daemon or in-process.

In-process, the directories are indexed first (incrementally), so the report
describes the folders as they are on disk, not as a stopped daemon last saw
them. The report goes where the daemon would put it:
``$XDG_STATE_HOME/memoryd/reports/``.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from memoryd import config as config_mod
from memoryd._cli_common import add_db_option, memory_dir, print_json
from memoryd._cli_daemon import add_socket_options, daemon_or_local
from memoryd._cli_select import local_store
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.report import Retention, produce, render, report_params


def register(sub: Any) -> None:
    r = sub.add_parser(
        "report", help="write a compaction and memory-health report now (never changes memories)"
    )
    r.add_argument("--dir", help="one memory directory (default: every root)")
    r.add_argument(
        "--older-than",
        dest="older_than",
        help="age past which sessions count as old or stale, e.g. 30d (default: the config's)",
    )
    r.add_argument("--json", action="store_true", help="print the answer as JSON")
    add_db_option(r)
    add_socket_options(r, fallback=True)
    r.set_defaults(handler=cmd_report)


def _local_roots(store: IndexStore, cfg: config_mod.Config) -> list[str]:
    """The daemon's roots as it would pick them: the config's, the index's, else defaults."""
    raw = [*cfg.roots, *store.roots()] or config_mod.default_roots()
    real = (os.path.realpath(os.path.expanduser(r)) for r in raw)
    return [r for r in dict.fromkeys(real) if os.path.isdir(r)]


def in_process(args: argparse.Namespace, params: dict[str, Any]) -> dict[str, Any]:
    cfg = config_mod.load()
    directory, older_than_s = report_params(params, cfg.report_older_than_days)
    with local_store(args) as store:
        dirs = [directory] if directory else _local_roots(store, cfg)
        syncer = Syncer(store)
        for d in dirs:
            syncer.sync_tree(d)
        return produce(store.conn, dirs, older_than_s, cfg.reports_dir, Retention.of(cfg))


def describe(result: dict[str, Any]) -> str:
    """A few lines for a terminal: where the report is, and what it found."""
    counts = result["summary"]
    found = [
        f"  {counts[key]:>6}  {label}"
        for key, label in render.SUMMARY_LABELS
        if key in ("directories", "files") or counts[key]
    ]
    return "\n".join(
        [render.NOTICE, f"report: {result['path']}", f"json:   {result['json']}", *found]
    )


def cmd_report(args: argparse.Namespace) -> int:
    params = {
        "dir": None if args.dir is None else memory_dir(args.dir),
        "older_than": args.older_than,
    }
    result = daemon_or_local(
        args,
        lambda c: c.report(params["dir"], params["older_than"]),
        lambda: in_process(args, {k: v for k, v in params.items() if v is not None}),
    )
    if args.json:
        print_json(result)
    else:
        print(describe(result))
    return 0
