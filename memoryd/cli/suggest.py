""" "Did you mean" for the command line: a misspelt option, a folder name one letter off.

argparse (3.11) says only ``unrecognized arguments: --dri``, and only after
it has complained about the ``--dir`` that seems to be missing. Checking the
words before argparse sees them gives the message a person needs, in the
usage of the command they typed.
"""

from __future__ import annotations

import argparse
import difflib
import os
from collections.abc import Sequence

CUTOFF = 0.75
"""How alike two names must be (difflib's ratio) to be offered as a correction."""


def misspelt_option(
    parser: argparse.ArgumentParser, words: Sequence[str]
) -> tuple[argparse.ArgumentParser, str, str] | None:
    """The first ``--option`` no parser on the way knows, the parser it was given to, a fix.

    Subcommand words move to that subcommand's parser; ``--`` ends the
    options. An option argparse would accept as an abbreviation is fine;
    one without a close match is left to argparse's own message.
    """
    current = parser
    for word in words:
        if word == "--":
            return None
        choices = _subcommands(current)
        if word in choices:
            current = choices[word]
            continue
        if not word.startswith("--"):
            continue
        name = word.split("=", 1)[0]
        known = [o for a in current._actions for o in a.option_strings if o.startswith("--")]
        if any(option.startswith(name) for option in known):
            continue
        close = difflib.get_close_matches(name, known, n=1, cutoff=CUTOFF)
        if close:
            return current, name, close[0]
    return None


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def near_folder(value: str) -> str | None:
    """A folder beside the missing ``value`` whose name is one slip away, as the user wrote it."""
    parent, name = os.path.split(os.path.expanduser(value).rstrip("/"))
    try:
        siblings = [e.name for e in os.scandir(parent or ".") if e.is_dir()]
    except OSError:
        return None
    close = difflib.get_close_matches(name, siblings, n=1, cutoff=CUTOFF)
    if not close:
        return None
    return os.path.join(os.path.dirname(value.rstrip("/")), close[0])
