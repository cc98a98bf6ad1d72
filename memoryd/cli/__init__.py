"""The ``memoryd`` command line: one subcommand per module, one exit path.

Expected failures (:class:`memoryd.errors.MemorydError`) print one line on
stderr and exit 1; argument mistakes exit 2 (argparse's convention). Nothing
expected ever shows a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from memoryd import __version__, logs
from memoryd.cli import suggest
from memoryd.errors import MemorydError

# The module that registers each subcommand. A run builds (and imports) only
# the module its command needs: building every subparser would import every
# command's module, a cost each run would pay for commands it never uses. `memoryd
# --help` and unknown commands get them all. tests/test_client_startup.py
# checks this table against what the modules register.
COMMANDS = {
    "index": "index",
    "list": "index",
    "serve": "daemon",
    "status": "daemon",
    "stop": "daemon",
    "reindex": "daemon",
    "watch": "daemon",
    "unwatch": "daemon",
    "install-service": "daemon",
    "select": "select",
    "stats": "select",
    "save": "sessions",
    "load-last": "sessions",
    "context": "sessions",
    "hook": "integrations",
    "install-hook": "integrations",
    "install-mcp": "integrations",
    "mcp": "integrations",
    "report": "check",
    "check": "check",
    "config": "config",
    "uninstall-hook": "uninstall",
    "uninstall-mcp": "uninstall",
    "uninstall-service": "uninstall",
    "completion": "config",
    "doctor": "config",
    "why": "why",
    "eval": "why",
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser with every subcommand, or only with ``command``'s module when it is known."""
    parser = argparse.ArgumentParser(
        prog="memoryd",
        description="Keep AI coding agents' memory folders indexed and answer queries about them.",
    )
    parser.add_argument(
        "--version", action=_Version, help="this memoryd's version, and the running daemon's"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    wanted = [COMMANDS[command]] if command in COMMANDS else dict.fromkeys(COMMANDS.values())
    for name in wanted:
        importlib.import_module(f"memoryd.cli.{name}").register(sub)
    _remember_parsers(sub)
    return parser


class _Version(argparse.Action):
    """``--version``: ``memoryd X.Y.Z``, then the version of the daemon that answers, if any.

    After an upgrade the daemon keeps running the old code until it restarts;
    this is where a user sees that the two differ.
    """

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        from memoryd.ipc.client import Client  # noqa: PLC0415 - only --version asks the daemon

        print(f"memoryd {__version__}")
        client = Client(timeout=2)
        try:
            with client:
                status = client.status()
        except MemorydError:
            print(f"daemon: none answers on {client.socket_path}")
        else:
            running = f"memoryd {status['version']} (pid {status['pid']})"
            print(f"daemon: {running} on {status['socket']}")
        parser.exit()


def _remember_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Give every (nested) subcommand its own parser as a default.

    Unknown options surface in the top-level parser; with the command's own
    parser at hand the message shows that command's usage, not the top level's.
    """
    for command in sub.choices.values():
        command.set_defaults(command_parser=command)
        for action in command._actions:
            if isinstance(action, argparse._SubParsersAction):
                _remember_parsers(action)


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(words[0] if words else None)
    misspelt = suggest.misspelt_option(parser, words)
    if misspelt is not None:
        owner, given, meant = misspelt
        owner.error(f"unrecognized argument {given}; did you mean {meant}?")
    args, unknown = parser.parse_known_args(words)
    if unknown:
        args.command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    # Commands other than `serve` log only warnings, and only to stderr;
    # structlog itself is loaded only if something needs it (see memoryd.logs).
    logs.set_level(os.environ.get("MEMORYD_LOG_LEVEL", "WARNING"))
    try:
        code: int = args.handler(args)
    except MemorydError as exc:
        print(f"memoryd: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
