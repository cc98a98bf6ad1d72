"""``memoryd completion SHELL``: print a completion script generated from the parser.

``eval "$(memoryd completion bash)"`` in ``~/.bashrc`` (zsh likewise, after
``compinit``); ``memoryd completion fish | source`` in fish's config, or save
the output as ``~/.config/fish/completions/memoryd.fish``.
"""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any) -> None:
    from memoryd.completion import SHELLS  # noqa: PLC0415 - light, but only this command uses it

    c = sub.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh, fish)",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument("shell", choices=SHELLS, help="the shell to print the script for")
    c.set_defaults(handler=cmd_completion)


def cmd_completion(args: argparse.Namespace) -> int:
    from memoryd.cli import build_parser  # noqa: PLC0415 - every command, to complete them all
    from memoryd.completion import script  # noqa: PLC0415

    print(script(args.shell, build_parser()), end="")
    return 0
