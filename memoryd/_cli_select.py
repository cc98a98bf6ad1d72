"""``memoryd select`` and ``memoryd stats``: through the daemon, or in-process."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from typing import Any

from memoryd import config as config_mod
from memoryd._cli_common import add_db_option, db_path, memory_dir, print_json
from memoryd._cli_daemon import add_socket_options, daemon_or_local
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.ipc import params as p
from memoryd.select.service import make_selector, record_run, run_stats
from memoryd.staleness.render import caution


def register(sub: Any) -> None:
    s = sub.add_parser("select", help="the memories that clearly help a query")
    s.add_argument("query")
    s.add_argument("--dir", required=True, help="the memory directory")
    s.add_argument(
        "--surfaced",
        action="append",
        default=[],
        metavar="FILE",
        help="a filename already shown this session (repeatable)",
    )
    s.add_argument(
        "--tool",
        action="append",
        default=[],
        dest="tools",
        metavar="TOOL",
        help="a tool the agent used recently (repeatable)",
    )
    s.add_argument("--limit", type=int, default=5)
    s.add_argument("--ranker", choices=("auto", "local", "anthropic"), default="auto")
    s.add_argument("--json", action="store_true")
    add_db_option(s)
    add_socket_options(s, fallback=True)
    s.set_defaults(handler=cmd_select)

    t = sub.add_parser("stats", help="selector telemetry: runs, latency, fallbacks, usage")
    t.add_argument("--since", default="7d", help="window such as 7d, 24h (default 7d)")
    t.add_argument("--json", action="store_true")
    add_db_option(t)
    add_socket_options(t, fallback=True)
    t.set_defaults(handler=cmd_stats)


@contextlib.contextmanager
def local_store(args: argparse.Namespace) -> Iterator[IndexStore]:
    store = IndexStore(db_path(args))
    try:
        yield store
    finally:
        store.close()


def in_process_select(args: argparse.Namespace, params: dict[str, Any]) -> dict[str, Any]:
    cfg = config_mod.load()
    with local_store(args) as store:

        def resolve(raw: Any) -> str:
            path = p.directory(raw)
            Syncer(store).sync_tree(path)
            return path

        selector = make_selector(cfg, lambda rec: record_run(store, rec))
        return selector.run(store.conn, params, resolve)


def cmd_select(args: argparse.Namespace) -> int:
    directory = memory_dir(args.dir)
    params = {
        "query": args.query,
        "dir": directory,
        "surfaced": args.surfaced,
        "recent_tools": args.tools,
        "limit": args.limit,
        "ranker": args.ranker,
    }
    result = daemon_or_local(
        args,
        lambda c: c.call("select", params),
        lambda: in_process_select(args, params),
    )
    if args.json:
        print_json(result)
        return 0
    for s in result["selected"]:
        print(f"{s['path']}\n    [{s['type']}] {s['description']}")
        warning = caution(s.get("staleness"))
        if warning:
            print(f"    {warning}")
    if not result["selected"]:
        print("(no memory clearly helps with this query)")
    if result.get("fallback"):
        print(f"(local ranker answered: {result['fallback']})")
    return 0


def render_stats(s: dict[str, Any]) -> str:
    lat = s["latency_ms"]
    empty = "n/a" if s["empty_rate"] is None else f"{s['empty_rate']:.0%}"
    lines = [
        f"selector runs since {s['since']}: {s['runs']} (empty answers {empty})",
        f"latency p50 {lat['p50']} ms, p95 {lat['p95']} ms",
        f"by ranker: {s['ranker_runs'] or '-'}; fallbacks: {s['fallback_rate'] or '-'}; "
        f"errors: {s['errors'] or '-'}; unknown names dropped: {s['dropped_unknown']}",
    ]
    if s["most_selected"]:
        lines.append("most selected:")
        lines += [f"  {m['count']:>4}  {m['filename']}" for m in s["most_selected"]]
    for directory, names in s["never_selected"].items():
        if names:
            lines.append(f"never selected in {directory}: {len(names)} file(s)")
    return "\n".join(lines)


def cmd_stats(args: argparse.Namespace) -> int:
    params = {"since": args.since}

    def local() -> dict[str, Any]:
        with local_store(args) as store:
            return run_stats(store.conn, params)

    result = daemon_or_local(args, lambda c: c.stats(args.since), local)
    if args.json:
        print_json(result)
    else:
        print(render_stats(result))
    return 0
