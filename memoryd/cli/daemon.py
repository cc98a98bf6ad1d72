"""``status``, ``stop``, ``reindex``, ``watch`` and ``unwatch``: asking the running daemon.

``status`` and ``stop`` only ask a running daemon; the others start one when none answers.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from memoryd.cli.common import add_socket_options, asks_daemon, note, show
from memoryd.cli.connect import answered, ask
from memoryd.cli.flags import add_params
from memoryd.errors import START_HINT, DaemonUnavailable, UnsafeDaemon
from memoryd.ipc.client import Client

if TYPE_CHECKING:
    from memoryd.replies import ReindexReply, StatusReply, WatchReply


def register(sub: Any) -> None:
    p = sub.add_parser("status", help="what the daemon is doing")
    asks_daemon(p, cmd_status, db=False, starts=False)

    p = sub.add_parser("stop", help="stop the daemon")
    add_socket_options(p, starts=False)
    p.set_defaults(handler=cmd_stop)

    p = sub.add_parser("reindex", help="full rescan of one directory or of every root")
    add_params(p, "reindex", "dir", dir={"nargs": "?"})
    asks_daemon(p, answered("reindex", _reindexed, timeout=600), db=False)

    p = sub.add_parser("watch", help="keep watching a memory directory, across restarts")
    add_params(p, "watch", "dir")
    asks_daemon(p, answered("watch", _watching, timeout=600), db=False)

    p = sub.add_parser("unwatch", help="stop watching a root and drop it from the index")
    add_params(p, "unwatch", "dir")
    asks_daemon(p, cmd_unwatch, db=False)


def _claude_folder(status: StatusReply) -> dict[str, str | bool]:
    """Claude Code's memory folder for this directory, and whether the daemon watches it."""
    from memoryd.claude_folders import memory_folder  # noqa: PLC0415 - only status needs it

    found = memory_folder(os.getcwd())
    path = str(found.directory)
    real = os.path.realpath(path)
    return {
        "cwd": found.project,
        "path": path,
        "reason": found.reason,
        "exists": os.path.isdir(path),
        "watched": any(
            real == r["path"] or real.startswith(r["path"].rstrip("/") + "/")
            for r in status.get("roots", [])
        ),
    }


def render_status(s: Mapping[str, Any]) -> str:
    """``status`` for a person: what quietly stopped working (alarms) first."""
    up = int(s["uptime_s"])
    uptime = f"{up // 3600}h{up // 60 % 60:02d}m{up % 60:02d}s"
    lines = [f"memoryd {s['version']} (pid {s['pid']}) {s['state']}, up {uptime}"]
    alarms = s.get("alarms")  # a daemon too old to have them says nothing
    if alarms == []:
        lines.append("alarms:  none")
    elif alarms:
        lines += ["alarms:", *(f"  ! {a['kind']}: {a['message']}" for a in alarms)]
    client = s.get("client_socket")
    activated = " (passed by systemd)" if s.get("activated") else ""
    if client:
        lines.append(f"socket:  {client['path']} (chosen by {client['reason']}){activated}")
    else:
        lines.append(f"socket:  {s['socket']}{activated}")
    lines += [f"index:   {s['db']}", "roots:"]
    for r in s["roots"]:
        origin = r.get("origin", "?")
        if r.get("forget_after"):
            origin += f", forgotten if unused until {r['forget_after']}"
        lines.append(
            f"  {r['path']}: {r['files']} files, {r['errors']} with errors, "
            f"{r['watcher']} ({origin})"
        )
        recrawl = r.get("last_recrawl")
        if recrawl:
            lines.append(
                f"    rescanned {r.get('recrawls', 0)} time(s), last {recrawl['at']} "
                f"({recrawl['reason']}, drift {recrawl['drift']})"
            )
    indexing = s.get("indexing")
    if indexing and indexing["phase"] == "indexing":
        lines.append(
            f"indexing: {indexing['done']:,} of {indexing['total']:,} files "
            f"({indexing['rate_per_s'] or 0:,}/s so far)"
        )
    rec = s.get("last_reconcile")
    rec_text = "never" if not rec else f"{rec['at']} ({rec['reason']}, drift {rec['drift']})"
    lines += [
        f"last event:     {s.get('last_event') or 'never'}",
        f"last reconcile: {rec_text}; drift fixed since start: {s['drift_fixed_total']}",
        f"writer queue:   {s['writer_queue']}; connections: {s['connections']}",
    ]
    reload = s.get("last_reload")
    if reload and not reload["applied"]:
        lines.append(f"last reload:    {reload['at']} refused, config kept: {reload['reason']}")
    failed = s.get("last_reconcile_error")
    if failed:
        lines.append(f"reconcile failed: {failed['at']} ({failed['reason']}): {failed['error']}")
    report = s.get("last_report")
    if report:
        lines.append(f"last report:    {report.get('at')} {report.get('path')}")
    folder = s.get("claude_code_folder")
    if folder:
        state = "watched" if folder["watched"] else "not watched"
        if not folder["exists"]:
            state = "does not exist yet"
        lines.append(f"Claude Code memory for {folder['cwd']}: {folder['path']}")
        lines.append(f"    {state}; {folder['reason']}")
    return "\n".join(lines)


def cmd_status(args: argparse.Namespace) -> int:
    c = Client(args.socket, timeout=10)
    try:
        with c:
            reply = c.status()
    except DaemonUnavailable as exc:
        raise DaemonUnavailable(f"{exc}; {START_HINT}") from None
    shown = {**reply, "client_socket": c.describe(), "claude_code_folder": _claude_folder(reply)}
    show(args, shown, render_status)
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    """Stop the daemon; with none running that is already so (exit 0, as ``systemctl stop``)."""
    c = Client(args.socket, timeout=10)
    try:
        with c:
            pid = int(c.call("shutdown")["pid"])
    except DaemonUnavailable as exc:
        if isinstance(exc, UnsafeDaemon):
            raise
        print(f"no memoryd daemon was running on {c.socket_path}")
        return 0
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not _exited(pid):
        time.sleep(0.05)
    if not _exited(pid):
        note(f"pid {pid} is still running 30 s after it agreed to stop")
        return 1
    print(f"memoryd (pid {pid}) stopped")
    return 0


def _exited(pid: int) -> bool:
    """True once ``pid`` is gone or a zombie waiting for its parent to reap it."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False


def _reindexed(result: ReindexReply) -> str:
    return f"reindexed {', '.join(result['dirs'])}: {counts(result)}"


def counts(result: Mapping[str, Any]) -> str:
    """A ``reindex`` answer's (or a sum of them) counts and time on one line."""
    return (
        f"added {result['added']}, updated {result['updated']}, removed {result['removed']}, "
        f"unchanged {result['unchanged']}, errors {len(result['errors'])} "
        f"in {result['seconds']:.2f} s"
    )


def _watching(reply: WatchReply) -> str:
    if reply["added"] or (reply["origin"] == "watch" and reply["root"] == reply["dir"]):
        return f"watching {reply['root']} ({reply['watcher']}); kept across restarts"
    return f"{reply['dir']} is already watched under {reply['root']} ({reply['origin']})"


def cmd_unwatch(args: argparse.Namespace) -> int:
    """The root as given, not resolved: its folder may be gone."""
    reply = ask(args, "unwatch", {"dir": args.dir}, timeout=600)
    dropped = f"{reply['files_forgotten']} file(s) dropped from the index"
    show(args, reply, lambda r: f"stopped watching {r['dir']} ({r['origin']}); {dropped}")
    if reply["returns_at_restart"] and not args.json:
        note("it is declared by the config or --root, so it comes back at the next start")
    return 0
