"""The ``memoryd`` command line: one subcommand per module, one exit path.

Expected failures (:class:`memoryd.errors.MemorydError`) print one line on
stderr and exit 1; argument mistakes exit 2 (argparse's convention). Nothing
expected ever shows a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from memoryd import (
    __version__,
    _cli_daemon,
    _cli_index,
    _cli_integrations,
    _cli_report,
    _cli_select,
    _cli_sessions,
    logs,
)
from memoryd.errors import MemorydError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memoryd",
        description="Keep AI coding agents' memory folders indexed and answer queries about them.",
    )
    parser.add_argument("--version", action="version", version=f"memoryd {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in (
        _cli_index,
        _cli_daemon,
        _cli_select,
        _cli_sessions,
        _cli_integrations,
        _cli_report,
    ):
        module.register(sub)
    _remember_parsers(sub)
    return parser


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
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        args.command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    # Commands other than `serve` log only warnings, and only to stderr.
    logs.configure(level=os.environ.get("MEMORYD_LOG_LEVEL", "WARNING"))
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
