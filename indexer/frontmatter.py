"""Split a memory file's text into YAML frontmatter and body, with exact errors.

Frontmatter is the YAML between a first line ``---`` and the next line ``---``.
Every way this can go wrong in real folders gets its own message, because the
message is what a person reads in ``memoryd list`` to fix the file.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

try:  # LibYAML is ~10x faster than the pure-Python loader.
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


# -- fast path ----------------------------------------------------------------
#
# Nearly every real header is a few ``key: plain words`` lines, and LibYAML
# spends ~40 us on even a 3-line one: the main Python cost of a cold index.
# The fast path takes only headers whose every line is ``key: value`` with a
# value YAML certainly loads as that exact string, and returns None (meaning
# "ask yaml") for anything else. tests/test_frontmatter_fastpath.py checks it
# against yaml on the corpus and on generated tricky headers.

# A conservative key: no quotes, no spaces, not too long for a YAML simple key.
_FAST_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]{0,127}): +(.*)")
# Anything outside printable YAML characters (tabs, CR, C0/C1 controls, NEL,
# the Unicode line/paragraph separators, BOM, noncharacters) goes to yaml.
_NOT_SIMPLE = re.compile(
    r"[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]"
)
# Words that PyYAML's resolver turns into booleans or null (YAML 1.1's bool
# words, plus the y/n that PyYAML does not resolve, to stay safe), any case.
_RESERVED_WORDS = frozenset({"yes", "no", "true", "false", "on", "off", "null", "y", "n"})


def _fast_scalar(value: str) -> str | None:
    """``value`` as YAML would load it, or None when that is not certainly a plain string."""
    if not value:
        return None
    first = value[0]
    if first == '"':
        inner = value[1:-1]
        if len(value) >= 2 and value[-1] == '"' and '"' not in inner and "\\" not in inner:
            return inner
        return None
    if first == "'":
        inner = value[1:-1]
        if len(value) >= 2 and value[-1] == "'" and "'" not in inner:
            return inner
        return None
    if (
        not first.isalpha()
        or ": " in value
        or " #" in value
        or value[-1] == ":"
        or value.lower() in _RESERVED_WORDS
    ):
        return None
    return value


def fast_mapping(yaml_text: str) -> dict[str, Any] | None:
    """The frontmatter of a simple ``key: value`` header, or None when yaml must decide."""
    if _NOT_SIMPLE.search(yaml_text):
        return None
    out: dict[str, Any] = {}
    for line in yaml_text.split("\n"):
        if not line:
            continue
        m = _FAST_LINE.fullmatch(line)
        if m is None:
            return None
        key, raw = m.groups()
        if key.lower() in _RESERVED_WORDS:
            return None
        value = _fast_scalar(raw.rstrip(" "))
        if value is None:
            return None
        out[key] = value
    return out or None


def load_mapping(yaml_text: str) -> dict[str, Any]:
    """Parse frontmatter YAML; it must be a mapping with string keys."""
    fast = fast_mapping(yaml_text)
    if fast is not None:
        return fast
    return load_mapping_yaml(yaml_text)


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


def load_mapping_yaml(yaml_text: str) -> dict[str, Any]:
    """:func:`load_mapping` without the fast path: always ask yaml."""
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
