"""Split a memory file's text into YAML frontmatter and body, with exact errors.

Frontmatter is the YAML between a first line ``---`` and the next line ``---``.
Every way this can go wrong in real folders gets its own message, because the
message is what a person reads in ``memoryd list`` to fix the file.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

try:  # LibYAML (C) parses far faster than the pure-Python loader.
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]


_DELIM = re.compile(r"^---[ \t]*$", re.MULTILINE)


class FrontmatterError(ValueError):
    """The frontmatter is missing or malformed; the message says how."""


def split(text: str) -> tuple[str, str]:
    """Return ``(yaml_text, body)``; raise FrontmatterError when there is none.

    ``text`` must already be decoded with CRLF folded to LF and any BOM removed.
    """
    if not text.startswith("---"):
        raise FrontmatterError(_why_no_frontmatter(text))
    first_nl = text.find("\n")
    first_line = text if first_nl < 0 else text[:first_nl]
    if not _DELIM.fullmatch(first_line):
        raise FrontmatterError("no frontmatter: the first line is not exactly '---'")
    if first_nl < 0:
        raise FrontmatterError("unterminated frontmatter: opening '---' on line 1 is never closed")
    close = _DELIM.search(text, first_nl + 1)
    if close is None:
        raise FrontmatterError("unterminated frontmatter: opening '---' on line 1 is never closed")
    yaml_text = text[first_nl + 1 : close.start()]
    body_start = close.end() + 1 if close.end() < len(text) else close.end()
    return yaml_text, text[body_start:]


def _why_no_frontmatter(text: str) -> str:
    stripped = text.lstrip()
    if stripped.startswith("+++"):
        return (
            "no YAML frontmatter: the file opens with '+++' (TOML); "
            "memoryd reads YAML between '---' lines"
        )
    if not stripped:
        return "no frontmatter: the file is empty"
    later = _DELIM.search(text)
    if later is not None:
        line = text.count("\n", 0, later.start()) + 1
        return (
            f"no frontmatter at the start of the file: a '---' block opens on line {line}, "
            "after other text"
        )
    return "no frontmatter: the file does not start with a '---' line"


def reject_aliases(yaml_text: str, first_line: int = 2) -> None:
    """Raise FrontmatterError when ``yaml_text`` uses an alias (``*name``).

    Aliases let a few hundred bytes stand for gigabytes once expanded (nested
    anchors, a "billion laughs"); memory headers never need them, so they are
    refused before anything is built. Only texts holding a ``*`` pay for the
    event scan. ``first_line`` is the file line the text starts on (frontmatter
    starts on line 2).
    """
    if "*" not in yaml_text:
        return
    try:
        for event in yaml.parse(yaml_text, Loader=_Loader):
            if isinstance(event, yaml.AliasEvent):
                mark = event.start_mark
                where = f" at line {mark.line + first_line}" if mark is not None else ""
                raise FrontmatterError(
                    f"YAML alias '*{event.anchor}'{where}: aliases are not allowed "
                    "(they can expand to unbounded size)"
                )
    except yaml.YAMLError:
        return  # the loader below reports the syntax error with its position


# dict[str, Any]: a file's front matter, any YAML mapping its author wrote; readers check
# the keys they use.
def load_mapping(yaml_text: str) -> dict[str, Any]:
    """Parse frontmatter YAML; it must be a mapping with string keys."""
    reject_aliases(yaml_text)
    try:
        data = yaml.load(yaml_text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        raise FrontmatterError(_describe_yaml_error(exc)) from None
    except yaml.YAMLError as exc:
        raise FrontmatterError(f"YAML error in frontmatter: {exc}") from None
    if data is None:
        raise FrontmatterError("frontmatter is empty")
    if not isinstance(data, dict):
        raise FrontmatterError(
            f"frontmatter is a YAML {_yaml_type(data)}, not a mapping of keys to values"
        )
    return {str(k): v for k, v in data.items()}


def _describe_yaml_error(exc: yaml.MarkedYAMLError) -> str:
    mark = exc.problem_mark
    # +2: marks are 0-based and the frontmatter starts on the file's line 2.
    where = f" at line {mark.line + 2}, column {mark.column + 1}" if mark is not None else ""
    problem = exc.problem or "invalid YAML"
    context = f" ({exc.context})" if exc.context else ""
    return f"YAML syntax error in frontmatter{where}: {problem}{context}"


def _yaml_type(value: object) -> str:
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__
