"""Helpers shared by the CLI subcommands: argument checks and output."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memoryd.cli.suggest import near_folder
from memoryd.errors import DirectoryError


def memory_dir(value: str, *, must_read: bool = True) -> str:
    """Resolve a DIR argument to a real absolute path, or fail with a clear reason.

    ``must_read=False`` leaves an unreadable directory to the command, for
    ``context``, which reports it as "session history unavailable".
    """
    try:
        path = os.path.realpath(os.path.expanduser(value))
    except OSError as exc:  # a link on the way that may not be read
        raise DirectoryError(f"cannot resolve {value}: {exc.strerror or exc}") from None
    if not os.path.exists(path):
        near = near_folder(value)
        hint = f"; did you mean {near}?" if near else ""
        raise DirectoryError(f"memory directory not found: {value}{hint}")
    if not os.path.isdir(path):
        raise DirectoryError(f"not a directory: {value}")
    if must_read and not os.access(path, os.R_OK | os.X_OK):
        raise DirectoryError(f"memory directory is not readable: {value}")
    return path


def add_socket_options(parser: argparse.ArgumentParser, *, starts: bool = True) -> None:
    """``--socket``, and ``--require-daemon`` for a command that starts a daemon when none runs."""
    parser.add_argument(
        "--socket",
        type=Path,
        default=None,
        help="daemon socket (default: $MEMORYD_SOCKET or the runtime dir)",
    )
    if starts:
        parser.add_argument(
            "--require-daemon",
            action="store_true",
            help="fail when no daemon answers instead of starting one",
        )


DB_HELP = (
    "the index database: a daemon started for this command serves it, and one already "
    "running must (default: the daemon's, $MEMORYD_DB or $XDG_STATE_HOME/memoryd/index.db)"
)


def add_db_option(parser: argparse.ArgumentParser, help: str = DB_HELP) -> None:
    parser.add_argument("--db", type=Path, default=None, help=help)


def add_settings_option(parser: argparse.ArgumentParser) -> None:
    """``--settings``: the Claude Code settings file that install-hook and uninstall-hook edit."""
    parser.add_argument(
        "--settings",
        type=Path,
        default=None,
        help="settings file (default: $CLAUDE_CONFIG_DIR/settings.json or ~/.claude/settings.json)",
    )


def add_codex_config_option(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``--config``: the Codex config file that install-mcp and uninstall-mcp edit."""
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        help="Codex config file (default: $CODEX_HOME/config.toml or ~/.codex/config.toml)",
    )
    return parser


def asks_daemon(
    parser: argparse.ArgumentParser,
    handler: Callable[[argparse.Namespace], int],
    *,
    db: bool = True,
    starts: bool = True,
) -> None:
    """A command the daemon answers: its handler, ``--json``, ``--db`` and the socket options."""
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    if db:
        add_db_option(parser)
    add_socket_options(parser, starts=starts)
    parser.set_defaults(handler=handler)


def show(args: argparse.Namespace, result: Any, render: Callable[[Any], str]) -> None:
    """``result`` as JSON with ``--json``, else as ``render`` words it."""
    if args.json:
        print_json(result)
    else:
        print(render(result))


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, ensure_ascii=False, sort_keys=True)
    sys.stdout.write("\n")


def note(message: str) -> None:
    """One informational line on stderr (stdout stays machine-readable)."""
    print(f"memoryd: {message}", file=sys.stderr)


def project_slug(value: str) -> str:
    """argparse type for ``--project``: lowercase a name that is otherwise a valid slug.

    Project names become part of session filenames, which are lowercase slugs;
    ``TaskTrack`` is an obvious spelling of ``tasktrack``, so it is accepted
    with a note rather than refused. Anything else is left for the
    ``invalid_params`` check to explain.
    """
    if value == value.lower():
        return value
    from memoryd.sessions.format import project_case_note  # noqa: PLC0415 - keep start-up light

    message = project_case_note(value)
    if message is None:
        return value  # not a slug even lowercased: the invalid_params check explains why
    note(message)
    return value.lower()
