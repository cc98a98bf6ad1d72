"""``memoryd serve``: run the daemon in the foreground; and the check of serve arguments
that ``install-service`` writes into a unit."""

from __future__ import annotations

import argparse
import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memoryd import logs
from memoryd.claude_folders import known_folders
from memoryd.cli.common import memory_dir
from memoryd.errors import ConfigError

if TYPE_CHECKING:
    from memoryd.config import Config
    from memoryd.daemon.roots import Origin


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
    p.add_argument(
        "--log-file",
        default=None,
        metavar="FILE",
        help="log here (0600; moved to FILE.1 past 8 MiB) instead of to stderr",
    )
    p.set_defaults(handler=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    # Imported here, not by `memoryd --help` or `memoryd completion` (run by each new shell).
    from memoryd import config as config_mod  # noqa: PLC0415
    from memoryd.daemon import profiling  # noqa: PLC0415
    from memoryd.daemon.app import Daemon  # noqa: PLC0415

    given = {key: getattr(args, key) for key in ("socket", "state_dir", "db")}
    cfg = replace(config_mod.load(args.config), **{k: v for k, v in given.items() if v})
    try:
        logs.configure(level=os.environ.get("MEMORYD_LOG_LEVEL", "INFO"), log_file=args.log_file)
    except OSError as exc:  # O_NOFOLLOW: a symlink in the log's place is refused too
        raise ConfigError(f"--log-file {args.log_file}: {exc.strerror or exc}") from None
    profiling.install()
    return Daemon(cfg, declared_roots(cfg, args.root, args.default_roots)).run()


def declared_roots(cfg: Config, given: list[str], defaults: bool) -> list[tuple[str, Origin]]:
    """The permanent roots as (real path, origin): ``--root`` (``serve``), else or also
    the config's (``configured``) or the defaults (``claude`` folders, else ``default``)."""
    from memoryd.config import default_roots  # noqa: PLC0415

    raw: list[tuple[str, Origin]] = [(memory_dir(r), "serve") for r in given]
    if defaults or not given:
        if cfg.roots:
            found: list[tuple[str, Origin]] = [(r, "configured") for r in cfg.roots]
        else:
            claude = {str(p) for p in known_folders()}
            found = [(r, "claude" if r in claude else "default") for r in default_roots()]
        raw = [*found, *raw]
    roots: dict[str, Origin] = {}
    for path, origin in raw:
        roots.setdefault(os.path.realpath(os.path.expanduser(path)), origin)
    return list(roots.items())


def checked_serve_args(words: list[str]) -> list[str]:
    """``words`` as a unit should pass them to ``memoryd serve``: parsed by serve's parser,
    their folders and config file checked as serve checks them (ConfigError), relative
    paths made absolute (a service runs from the home directory)."""
    from memoryd.cli import build_parser  # noqa: PLC0415 - the package imports this module
    from memoryd.config import load  # noqa: PLC0415

    # A malformed option (``--root`` without a folder) is argparse's usage error, as for serve.
    args, unknown = build_parser("serve").parse_known_args(["serve", *words])
    if unknown:
        raise ConfigError(
            f"not `memoryd serve` arguments: {' '.join(unknown)}; no unit was written "
            "(see `memoryd serve --help`)"
        )
    for root in args.root:
        memory_dir(root)
    load(args.config)
    options = {
        option
        for action in args.command_parser._actions
        if action.type is Path or action.metavar == "DIR"
        for option in action.option_strings
    }
    out: list[str] = []
    wants_path = False
    for word in words:  # each path given to one of ``options``: ``--x P`` and ``--x=P`` alike
        name, eq, value = word.partition("=")
        if wants_path:
            out.append(os.path.abspath(os.path.expanduser(word)))
        elif eq and name in options:
            out.append(f"{name}={os.path.abspath(os.path.expanduser(value))}")
        else:
            out.append(word)
        wants_path = not eq and word in options
    return out
