"""``install-service -- ARGS``: check the serve arguments before a unit is written with them.

A unit whose ``ExecStart`` fails shows up only as a failed start in the
journal, long after the command that wrote it said "wrote". So the arguments
are parsed by ``memoryd serve``'s own parser first, the folders and the
config file they name are checked as ``serve`` would check them, and
relative paths are made absolute: the service runs from the home directory,
not from wherever ``install-service`` was typed.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from memoryd.errors import ConfigError


def checked_serve_args(words: list[str]) -> list[str]:
    """``words`` as the unit should pass them to ``memoryd serve``; ConfigError when they fail."""
    from memoryd import config as config_mod  # noqa: PLC0415 - only this command needs it
    from memoryd.cli import build_parser  # noqa: PLC0415 - the parser serve itself uses
    from memoryd.cli.common import memory_dir  # noqa: PLC0415

    # A malformed option (``--root`` without a folder) is argparse's usage error, as for serve.
    args, unknown = build_parser("serve").parse_known_args(["serve", *words])
    if unknown:
        raise ConfigError(
            f"not `memoryd serve` arguments: {' '.join(unknown)}; no unit was written "
            "(see `memoryd serve --help`)"
        )
    for root in args.root:
        memory_dir(root)
    config_mod.load(args.config)
    return _absolute(words, _path_options(args.command_parser))


def _path_options(serve: argparse.ArgumentParser) -> set[str]:
    """The options of ``serve`` that take a path (``--root DIR``, ``--socket PATH``, ...)."""
    return {
        option
        for action in serve._actions
        if action.type is Path or action.metavar == "DIR"
        for option in action.option_strings
    }


def _absolute(words: list[str], options: set[str]) -> list[str]:
    """Each path given to one of ``options`` made absolute (``--x P`` and ``--x=P`` alike)."""
    out: list[str] = []
    wants_path = False
    for word in words:
        name, eq, value = word.partition("=")
        if wants_path:
            out.append(os.path.abspath(os.path.expanduser(word)))
        elif eq and name in options:
            out.append(f"{name}={os.path.abspath(os.path.expanduser(value))}")
        else:
            out.append(word)
        wants_path = not eq and word in options
    return out
