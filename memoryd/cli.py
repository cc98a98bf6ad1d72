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
    _cli_check,
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
        _cli_check,
    ):
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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
