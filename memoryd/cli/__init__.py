"""The ``memoryd`` command line: one subcommand per module, one exit path.

Expected failures (:class:`memoryd.errors.MemorydError`) print one line on stderr and
exit 1; argument mistakes exit 2 (argparse's convention); none shows a traceback.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from memoryd import __version__, logs
from memoryd.errors import MemorydError

# The commands of each module: a run imports and builds only its command's module
# (`--help` and unknown commands get them all).
MODULES = {
    "index": ("index", "list"),
    "serve": ("serve",),
    "daemon": ("status", "stop", "reindex", "watch", "unwatch"),
    "select": ("select", "stats"),
    "sessions": ("save", "load-last", "context"),
    "integrations": ("hook", "mcp"),
    "install": (
        "install-hook",
        "uninstall-hook",
        "install-mcp",
        "uninstall-mcp",
        "install-service",
        "uninstall-service",
    ),
    "check": ("check", "report"),
    "config": ("config", "completion", "doctor"),
    "why": ("why", "eval"),
}
COMMANDS = {command: module for module, commands in MODULES.items() for command in commands}


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
    for name in [COMMANDS[command]] if command in COMMANDS else MODULES:
        importlib.import_module(f"memoryd.cli.{name}").register(sub)
    _remember_parsers(sub)
    return parser


class _Version(argparse.Action):
    """``--version``: ``memoryd X.Y.Z``, then the version of the daemon that answers, if any."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        from memoryd.cli.connect import probe  # noqa: PLC0415 - only --version asks the daemon
        from memoryd.paths import socket_choice  # noqa: PLC0415

        print(f"memoryd {__version__}")
        socket, _ = socket_choice()
        status = probe(socket)
        if status is None:
            print(f"daemon: none answers on {socket}")
        else:
            running = f"memoryd {status['version']} (pid {status['pid']})"
            print(f"daemon: {running} on {status['socket']}")
        parser.exit()


def _remember_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Give every (nested) subcommand its own parser as ``command_parser``, so that an
    unknown option is reported with that command's usage."""
    for command in sub.choices.values():
        command.set_defaults(command_parser=command)
        for action in command._actions:
            if isinstance(action, argparse._SubParsersAction):
                _remember_parsers(action)


def misspelt_option(
    parser: argparse.ArgumentParser, words: Sequence[str]
) -> tuple[argparse.ArgumentParser, str, str] | None:
    """The first ``--option`` no parser on the way knows, the parser it was given to, a fix.

    An option argparse would accept as an abbreviation is fine; one without a close
    match is left to argparse's own message. ``--`` ends the options.
    """
    current = parser
    for word in words:
        if word == "--":
            return None
        subparsers = [a for a in current._actions if isinstance(a, argparse._SubParsersAction)]
        if subparsers and word in subparsers[0].choices:
            current = subparsers[0].choices[word]
            continue
        if not word.startswith("--"):
            continue
        name = word.split("=", 1)[0]
        known = [o for a in current._actions for o in a.option_strings if o.startswith("--")]
        if any(option.startswith(name) for option in known):
            continue
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
        if close:
            return current, name, close[0]
    return None


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(words[0] if words else None)
    misspelt = misspelt_option(parser, words)
    if misspelt is not None:
        owner, given, meant = misspelt
        owner.error(f"unrecognized argument {given}; did you mean {meant}?")
    args, unknown = parser.parse_known_args(words)
    if unknown:
        args.command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    # Commands other than `serve` log only warnings, and only to stderr.
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
