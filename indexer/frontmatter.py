"""Split a memory file's text into YAML frontmatter and body, with exact errors.

Frontmatter is the YAML between a first line ``---`` and the next ``---`` line;
each way it goes wrong has its own message. Loading gives JSON values only and
raises nothing but :class:`FrontmatterError` (a value YAML cannot build stays text).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import yaml

try:  # LibYAML (C) parses far faster than the pure-Python loader.
    from yaml import CSafeLoader as _SafeLoader
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    from yaml import SafeLoader as _SafeLoader  # type: ignore[assignment]

_STR = "tag:yaml.org,2002:str"


class _Loader(_SafeLoader):
    """The safe loader with constructors that cannot raise and build only JSON values.

    A scalar YAML cannot make its tag's type of (``created: 2025-02-30``,
    ``!!int abc``) stays its text; dates are never built, binary gives text, a
    set a list.
    """

    yaml_implicit_resolvers = {  # noqa: RUF012 - a class-wide table, as in PyYAML
        first: [(tag, regexp) for tag, regexp in resolvers if not tag.endswith(":timestamp")]
        for first, resolvers in _SafeLoader.yaml_implicit_resolvers.items()
    }


def _total(construct: Callable[[Any, Any], object]) -> Callable[[Any, Any], object]:
    """``construct``, or the node's plain text when it cannot make the tag's type of it."""

    def constructor(loader: Any, node: Any) -> object:
        if not isinstance(node, yaml.ScalarNode):
            return construct(loader, node)  # the base reports a non-scalar with its position
        try:
            value = construct(loader, node)
        except Exception:
            return str(node.value)
        if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
            return str(node.value)  # a number no reader needs, that str() may refuse to print
        if isinstance(value, float) and not math.isfinite(value):
            return str(node.value)  # .inf and .nan are not JSON
        return value

    return constructor


for _tag in ("null", "bool", "int", "float"):
    _Loader.add_constructor(
        f"tag:yaml.org,2002:{_tag}",
        _total(_SafeLoader.yaml_constructors[f"tag:yaml.org,2002:{_tag}"]),
    )
for _tag in ("timestamp", "binary"):
    _Loader.add_constructor(f"tag:yaml.org,2002:{_tag}", _SafeLoader.yaml_constructors[_STR])


def _set(loader: Any, node: Any) -> list[str]:
    return sorted(str(k) for k in loader.construct_mapping(node))


_Loader.add_constructor("tag:yaml.org,2002:set", _set)


_DELIM = re.compile(r"^---[ \t]*$", re.MULTILINE)


class FrontmatterError(ValueError):
    """The frontmatter is missing or malformed; the message says how."""


class YamlSyntaxError(FrontmatterError):
    """The frontmatter is not YAML at all (as opposed to YAML of the wrong shape)."""


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
    close = None if first_nl < 0 else _DELIM.search(text, first_nl + 1)
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
    """Raise FrontmatterError when ``yaml_text`` uses an alias (``*name``), which can expand
    to unbounded size. ``first_line`` is the file line the text starts on."""
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


_YAML_TYPES = {list: "list", str: "string", bool: "boolean", int: "number", float: "number"}


# dict[str, Any]: a file's front matter, any YAML mapping its author wrote; readers check
# the keys they use.
def load_mapping(yaml_text: str) -> dict[str, Any]:
    """Parse frontmatter YAML; it must be a mapping with string keys."""
    reject_aliases(yaml_text)
    try:
        data = yaml.load(yaml_text, Loader=_Loader)  # noqa: S506 - the safe loader, subclassed
    except yaml.MarkedYAMLError as exc:
        raise YamlSyntaxError(_describe_yaml_error(exc)) from None
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(f"YAML error in frontmatter: {exc}") from None
    if data is None:
        raise FrontmatterError("frontmatter is empty")
    if not isinstance(data, dict):
        raise FrontmatterError(
            f"frontmatter is a YAML {_YAML_TYPES.get(type(data), type(data).__name__)}, "
            "not a mapping of keys to values"
        )
    return {str(k): v for k, v in data.items()}


_PLAIN_LINE = re.compile(r"(?P<indent>[ \t]*)(?P<key>[A-Za-z_][\w.-]*):(?:[ \t]+(?P<value>.*))?")

_YAML_SYNTAX = frozenset("\"'[{|>&*!%@`")
"""Characters a plain value cannot start with: the author wrote YAML syntax there."""


# dict[str, Any]: a YAML mapping, any JSON-shaped values.
def load_header(yaml_text: str) -> tuple[dict[str, Any], str | None]:
    """The header's mapping, and a warning when it had to be read leniently.

    A header that is not YAML but only plain ``key: value`` lines
    (``description: Fixed: the lap view``) is read line by line: the value is
    the rest of the line, as text, with one level of indented lines under a key
    with no value. Anything else raises the strict error.
    """
    try:
        return load_mapping(yaml_text), None
    except YamlSyntaxError as exc:
        fields = _plain_lines(yaml_text)
        if fields is None:
            raise
        return fields, (
            f"header read as plain 'key: value' lines, since it is not valid YAML ({exc}); "
            "quote values that hold ': '"
        )


# dict[str, Any]: string values, and one nested mapping level.
def _plain_lines(yaml_text: str) -> dict[str, Any] | None:
    """``yaml_text`` as ``key: value`` lines (see :func:`load_header`), or None if it is not."""
    fields: dict[str, Any] = {}
    nested: dict[str, Any] | None = None
    for line in yaml_text.split("\n"):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        found = _PLAIN_LINE.fullmatch(line)
        if found is None:
            return None
        key, value = found["key"], (found["value"] or "").strip() or None
        if value is not None and value[0] in _YAML_SYNTAX:
            return None  # meant as YAML (a quote, a list, a block): its error stands
        if found["indent"]:
            if nested is None:
                return None
            nested[key] = value
        elif value is None:
            fields[key] = nested = {}
        else:
            fields[key], nested = value, None
    # A key with nothing under it is an empty value, as in YAML.
    return {k: v if v != {} else None for k, v in fields.items()} or None


def _describe_yaml_error(exc: yaml.MarkedYAMLError) -> str:
    mark = exc.problem_mark
    # +2: marks are 0-based and the frontmatter starts on the file's line 2.
    where = f" at line {mark.line + 2}, column {mark.column + 1}" if mark is not None else ""
    problem = exc.problem or "invalid YAML"
    context = f" ({exc.context})" if exc.context else ""
    return f"YAML syntax error in frontmatter{where}: {problem}{context}"
