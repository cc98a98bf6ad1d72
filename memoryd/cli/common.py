"""Helpers shared by the CLI subcommands: folder arguments, the daemon options, output."""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memoryd.errors import DirectoryError


def memory_dir(value: str, *, must_read: bool = True) -> str:
    """A DIR argument as a real absolute path, or DirectoryError saying why (with a near
    miss to suggest); ``must_read=False`` leaves an unreadable folder to the command."""
    try:
        path = os.path.realpath(os.path.expanduser(value))
    except OSError as exc:  # a link on the way that may not be read
        raise DirectoryError(f"cannot resolve {value}: {exc.strerror or exc}") from None
    if not os.path.exists(path):
        near = _near_folder(value)
        hint = f"; did you mean {near}?" if near else ""
        raise DirectoryError(f"memory directory not found: {value}{hint}")
    if not os.path.isdir(path):
        raise DirectoryError(f"not a directory: {value}")
    if must_read and not os.access(path, os.R_OK | os.X_OK):
        raise DirectoryError(f"memory directory is not readable: {value}")
    return path


def _near_folder(value: str) -> str | None:
    """A folder beside the missing ``value`` whose name is one slip away, as the user wrote it."""
    parent, name = os.path.split(os.path.expanduser(value).rstrip("/"))
    try:
        siblings = [e.name for e in os.scandir(parent or ".") if e.is_dir()]
    except OSError:
        return None
    close = difflib.get_close_matches(name, siblings, n=1, cutoff=0.75)
    return os.path.join(os.path.dirname(value.rstrip("/")), close[0]) if close else None


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
        parser.add_argument(
            "--db",
            type=Path,
            default=None,
            help="the index database: a daemon started for this command serves it, and one "
            "already running must (default: the daemon's, $MEMORYD_DB or "
            "$XDG_STATE_HOME/memoryd/index.db)",
        )
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
