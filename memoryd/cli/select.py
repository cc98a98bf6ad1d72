"""``memoryd select`` and ``memoryd stats``, answered by the daemon."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from memoryd.cli.common import asks_daemon, print_json
from memoryd.cli.connect import answered, ask
from memoryd.cli.flags import add_params, wire_params
from memoryd.staleness.render import caution

if TYPE_CHECKING:
    from memoryd.replies import StatsReply


def register(sub: Any) -> None:
    s = sub.add_parser("select", help="the memories that clearly help a query")
    add_params(
        s,
        "select",
        "query",
        # for programs: a person reads secrets themselves, a shell has no session or deadline
        skip=("allow_secrets", "session_id", "timeout_ms"),
        dir={"required": True},
        surfaced={
            "metavar": "FILE",
            "type": surfaced_entry,
            "help": "a memory already shown this session: its file name or its path, "
            "as select prints it (repeatable)",
        },
        recent_tools={
            "flag": "--tool",
            "metavar": "TOOL",
            "help": "a tool the agent used recently (repeatable)",
        },
    )
    asks_daemon(s, cmd_select)

    t = sub.add_parser("stats", help="selector telemetry: runs, latency, fallbacks, usage")
    add_params(t, "stats")
    asks_daemon(t, answered("stats", render_stats))


def surfaced_entry(value: str) -> str:
    """A path made absolute here, where its base is known; a bare file name as it is."""
    return os.path.abspath(os.path.expanduser(value)) if "/" in value else value


def cmd_select(args: argparse.Namespace) -> int:
    result = ask(args, "select", wire_params(args, "select"))
    note = result.get("note")
    # Not a memory folder at all (a typo, the checkout's top): say what it holds, and fail.
    # A memory folder whose files all have errors is the right folder: its note is shown.
    wrong = None if result.get("memory_folder", True) else note  # an older daemon: shown
    if args.json:
        print_json(result)
        return 1 if wrong else 0
    if wrong:
        print(f"memoryd: error: {wrong}", file=sys.stderr)
        return 1
    for s in result["selected"]:
        print(f"{s['path']}\n    [{s['type']}] {s['description']}")
        warning = caution(s.get("staleness"))
        if warning:
            print(f"    {warning}")
    if not result["selected"]:
        print(f"({note or 'no memory clearly helps with this query'})")
    if result.get("fallback"):
        print(f"(local ranker answered: {result['fallback']})")
    return 0


def render_stats(s: StatsReply) -> str:
    lat = s["latency_ms"]
    empty = "n/a" if s["empty_rate"] is None else f"{s['empty_rate']:.0%}"
    rows = [("ranker", name, str(n)) for name, n in sorted(s["ranker_runs"].items())]
    rows += [("fallback", why, f"{rate:.0%}") for why, rate in s["fallback_rate"].items()]
    rows += [("error", kind, str(n)) for kind, n in s["errors"].items()]
    lines = [
        f"selector runs since {s['since']}: {s['runs']} (empty answers {empty})",
        f"latency p50 {lat['p50']} ms, p95 {lat['p95']} ms",
        "",
        *aligned([("", "", "runs / rate"), *rows]),
        "",
        f"unknown names dropped: {s['dropped_unknown']}",
    ]
    for name, r in s.get("rankers", {}).items():
        if r["shortlist_mean"] is not None:
            wait, fell = r["judge_ms"], r["fallbacks"]
            lines.append(
                f"judge {name}: {r['runs']} runs, shortlist {r['shortlist_mean']:g}, "
                f"p50 {wait['p50']} ms, p95 {wait['p95']} ms, "
                f"tokens {r['tokens_in']} in / {r['tokens_out']} out, fallbacks "
                + (", ".join(f"{why} {n}" for why, n in fell.items()) or "none")
            )
    if s["most_selected"]:
        lines.append("most selected:")
        lines += [f"  {m['count']:>4}  {m['filename']}" for m in s["most_selected"]]
    for directory, names in s["never_selected"].items():
        if names:
            lines.append(f"never selected in {directory}: {len(names)} file(s)")
    return "\n".join(lines)


def aligned(rows: list[tuple[str, str, str]]) -> list[str]:
    """Rows of (group, name, value) as text columns, the value right-aligned."""
    width = [max(len(r[i]) for r in rows) for i in range(3)]
    return [f"{g:<{width[0]}}  {n:<{width[1]}}  {v:>{width[2]}}".rstrip() for g, n, v in rows]
