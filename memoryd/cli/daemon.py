"""Daemon subcommands: serve, status, stop, reindex, watch, unwatch, install-service.

``status`` and ``stop`` only ask a running daemon; ``reindex``, ``watch`` and
``unwatch``, like every command that needs the index, start one when none
answers (:mod:`memoryd.cli.connect`).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memoryd import logs
from memoryd.cli.common import add_socket_options, asks_daemon, memory_dir, note, show
from memoryd.cli.connect import ask
from memoryd.cli.flags import add_params, wire_params
from memoryd.errors import START_HINT, DaemonUnavailable, UnsafeDaemon
from memoryd.ipc.client import Client, SocketChoice

if TYPE_CHECKING:
    from typing import NotRequired, TypedDict

    from memoryd import config as config_mod
    from memoryd.daemon.roots import Origin
    from memoryd.replies import ReindexReply, StatusReply, WatchReply

    class ClaudeFolder(TypedDict):
        """Claude Code's memory folder for the current directory, as ``status`` shows it."""

        cwd: str
        path: str
        reason: str
        exists: bool
        watched: bool

    class ShownStatus(StatusReply):
        """The daemon's ``status`` with what only the client knows: its socket, its folder."""

        client_socket: NotRequired[SocketChoice]
        claude_code_folder: NotRequired[ClaudeFolder]


def register(sub: Any) -> None:
    p = sub.add_parser("serve", help="run the daemon in the foreground")
    p.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="DIR",
        help="memory directory to watch (repeatable; overrides the config)",
    )
    p.add_argument(
        "--default-roots",
        action="store_true",
        help="also watch the configured roots (or Claude Code's memory folders) with --root",
    )
    p.add_argument(
        "--socket", type=Path, default=None, help="listen here (default: as clients choose it)"
    )
    p.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        help="index, pidfile and reports (default $XDG_STATE_HOME/memoryd)",
    )
    p.add_argument("--db", type=Path, default=None, help="index database path")
    p.add_argument("--config", type=Path, default=None, help="config file")
    p.set_defaults(handler=cmd_serve)

    p = sub.add_parser("status", help="what the daemon is doing")
    asks_daemon(p, cmd_status, db=False, starts=False)

    p = sub.add_parser("stop", help="stop the daemon")
    add_socket_options(p, starts=False)
    p.set_defaults(handler=cmd_stop)

    p = sub.add_parser("reindex", help="full rescan of one directory or of every root")
    add_params(p, "reindex", "dir", dir={"nargs": "?"})
    asks_daemon(p, cmd_reindex, db=False)

    p = sub.add_parser("watch", help="keep watching a memory directory, across restarts")
    add_params(p, "watch", "dir")
    asks_daemon(p, cmd_watch, db=False)

    p = sub.add_parser("unwatch", help="stop watching a root and drop it from the index")
    add_params(p, "unwatch", "dir")
    asks_daemon(p, cmd_unwatch, db=False)

    p = sub.add_parser("install-service", help="install the systemd user units")
    p.add_argument("--unit-dir", type=Path, default=None, help="default ~/.config/systemd/user")
    p.add_argument(
        "serve_args",
        nargs=argparse.REMAINDER,
        help="extra arguments for `memoryd serve` (after --)",
    )
    p.set_defaults(handler=cmd_install_service)


def cmd_serve(args: argparse.Namespace) -> int:
    from dataclasses import replace  # noqa: PLC0415 - keep client start-up light

    from memoryd import config as config_mod  # noqa: PLC0415
    from memoryd.daemon import profiling  # noqa: PLC0415
    from memoryd.daemon.app import Daemon  # noqa: PLC0415

    cfg = config_mod.load(args.config)
    if args.socket:
        cfg = replace(cfg, socket=args.socket)
    if args.state_dir:
        cfg = replace(cfg, state_dir=args.state_dir)
    if args.db:
        cfg = replace(cfg, db=args.db)
    logs.configure(level=os.environ.get("MEMORYD_LOG_LEVEL", "INFO"))
    profiling.install()
    return Daemon(cfg, declared_roots(cfg, args.root, args.default_roots)).run()


def declared_roots(
    cfg: config_mod.Config, given: list[str], defaults: bool
) -> list[tuple[str, Origin]]:
    """The permanent roots as (real path, origin): ``--root``, else/also config or defaults.

    Origins: ``serve`` (``--root``), ``configured`` (the config file),
    ``claude`` (a Claude Code project folder), ``default`` (the XDG folder).
    """
    from memoryd import config as config_mod  # noqa: PLC0415 - only `serve` needs it

    raw: list[tuple[str, Origin]] = [(memory_dir(r), "serve") for r in given]
    if defaults or not given:
        if cfg.roots:
            found: list[tuple[str, Origin]] = [(r, "configured") for r in cfg.roots]
        else:
            from memoryd.claude_folders import known_folders  # noqa: PLC0415

            claude = {str(p) for p in known_folders()}
            found = [
                (r, "claude" if r in claude else "default") for r in config_mod.default_roots()
            ]
        raw = [*found, *raw]
    roots: dict[str, Origin] = {}
    for path, origin in raw:
        roots.setdefault(os.path.realpath(os.path.expanduser(path)), origin)
    return list(roots.items())


def _claude_folder(status: StatusReply) -> ClaudeFolder:
    """Claude Code's memory folder for this directory, and whether the daemon watches it."""
    from memoryd.claude_folders import memory_folder  # noqa: PLC0415

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


def _alarm_lines(s: ShownStatus) -> list[str]:
    """What quietly stopped working, first, so it is not missed (a daemon too old says nothing)."""
    alarms = s.get("alarms")
    if alarms is None:
        return []
    if not alarms:
        return ["alarms:  none"]
    return ["alarms:", *(f"  ! {a['kind']}: {a['message']}" for a in alarms)]


def render_status(s: ShownStatus) -> str:
    up = int(s["uptime_s"])
    uptime = f"{up // 3600}h{up // 60 % 60:02d}m{up % 60:02d}s"
    lines = [f"memoryd {s['version']} (pid {s['pid']}) {s['state']}, up {uptime}"]
    lines += _alarm_lines(s)
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
    shown: ShownStatus = {
        **reply,
        "client_socket": c.describe(),
        "claude_code_folder": _claude_folder(reply),
    }
    show(args, shown, render_status)
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    """Stop the daemon; with none running that is already so (exit 0, as ``systemctl stop``)."""
    c = Client(args.socket, timeout=10)
    try:
        with c:
            reply = c.shutdown()
    except DaemonUnavailable as exc:
        if isinstance(exc, UnsafeDaemon):
            raise
        print(f"no memoryd daemon was running on {c.socket_path}")
        return 0
    pid = int(reply["pid"])
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
    return (
        f"reindexed {', '.join(result['dirs'])}: added {result['added']}, "
        f"updated {result['updated']}, removed {result['removed']}, "
        f"unchanged {result['unchanged']}, errors {len(result['errors'])} "
        f"in {result['seconds']:.2f} s"
    )


def _watching(reply: WatchReply) -> str:
    if reply["added"] or (reply["origin"] == "watch" and reply["root"] == reply["dir"]):
        return f"watching {reply['root']} ({reply['watcher']}); kept across restarts"
    return f"{reply['dir']} is already watched under {reply['root']} ({reply['origin']})"


def cmd_reindex(args: argparse.Namespace) -> int:
    show(args, ask(args, "reindex", wire_params(args, "reindex"), timeout=600), _reindexed)
    return 0


def cmd_watch(args: argparse.Namespace) -> int:
    show(args, ask(args, "watch", wire_params(args, "watch"), timeout=600), _watching)
    return 0


def cmd_unwatch(args: argparse.Namespace) -> int:
    """The root as given, not resolved: its folder may be gone."""
    reply = ask(args, "unwatch", {"dir": args.dir}, timeout=600)
    dropped = f"{reply['files_forgotten']} file(s) dropped from the index"
    show(args, reply, lambda r: f"stopped watching {r['dir']} ({r['origin']}); {dropped}")
    if reply["returns_at_restart"] and not args.json:
        note("it is declared by the config or --root, so it comes back at the next start")
    return 0


def cmd_install_service(args: argparse.Namespace) -> int:
    from memoryd.cli.serve_args import checked_serve_args  # noqa: PLC0415
    from memoryd.integrations.systemd_units import install  # noqa: PLC0415

    extra = checked_serve_args([a for a in args.serve_args if a != "--"])
    for unit in install(args.unit_dir, extra):
        if unit.outcome == "unchanged":
            print(f"{unit.path} is up to date")
            continue
        print(f"wrote {unit.path}")
        if unit.backup is not None:
            print(f"  your previous copy is saved as {unit.backup}; what changed:")
            print("\n".join(f"    {line}" for line in unit.changes))
    print("enable and start it with:")
    print("  systemctl --user daemon-reload")
    print("  systemctl --user enable --now memoryd.socket memoryd.service")
    if extra:
        print(f"(serve arguments: {shlex.join(extra)})")
    sys.stdout.flush()
    return 0
