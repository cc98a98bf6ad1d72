"""A method's params as declared: the field helper, what the edges read, the one decoder.

A declaration is a frozen dataclass (:mod:`memoryd.methods`): a field's type is its wire
type, its default the wire default (none: required), its :func:`param` metadata the help,
bounds, choices and whether only the daemon reads it. :func:`decode` turns an unknown
param, a wrong type or a value out of bounds into ``invalid_params`` naming the field;
checks that need the disk or a domain's rules stay with the handler.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import types
import typing
from collections.abc import Mapping
from dataclasses import field
from typing import Annotated, Any, NamedTuple, TypeVar

from memoryd.errors import InvalidParams

Dir = Annotated[str, "dir"]
"""A directory path: a non-empty string (the handler resolves it)."""
Dirs = Annotated[tuple[str, ...], "dirs"]
"""A directory or a list of them."""
Duration = Annotated[str | float, "duration"]
"""``7d``, ``12h``, ``45m`` or a number of seconds (the handler converts it)."""


def param(
    help: str,
    default: Any = dataclasses.MISSING,
    *,
    lo: int | None = None,
    hi: int | None = None,
    max_len: int | None = None,
    choices: tuple[str, ...] = (),
    daemon_only: bool = False,
    doc: str = "",
) -> Any:
    """A field that is a param: ``help`` (the CLI's and MCP's words), ``doc`` (the protocol
    page's, when it says more), bounds of an integer (``lo``..``hi``) or a string's length."""
    meta = {
        "help": help,
        "lo": lo,
        "hi": hi,
        "max_len": max_len,
        "choices": choices,
        "daemon_only": daemon_only,
        "doc": doc,
    }
    return field(default=default, metadata=meta)


class Param(NamedTuple):
    """One param as the edges see it: a field of a declaration with its type's wire kind."""

    name: str
    kind: str
    """string, strings, integer, boolean, mapping, dir, dirs or duration."""
    required: bool
    default: Any
    help: str
    doc: str
    lo: int | None
    hi: int | None
    max_len: int | None
    choices: tuple[str, ...]
    daemon_only: bool


_KINDS = {str: "string", int: "integer", bool: "boolean", tuple: "strings", Mapping: "mapping"}


def _kind(hint: Any) -> str:
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in args:
        (hint,) = (a for a in args if a is not type(None))
        args = typing.get_args(hint)
    if typing.get_origin(hint) is Annotated:
        return str(args[1])
    return _KINDS[typing.get_origin(hint) or hint]


@functools.cache
def params(decl: type) -> tuple[Param, ...]:
    """``decl``'s params in declaration order."""
    hints = typing.get_type_hints(decl, include_extras=True)
    found = []
    for f in dataclasses.fields(decl):
        meta = {**f.metadata, "doc": f.metadata["doc"] or f.metadata["help"]}
        required = f.default is dataclasses.MISSING
        default = None if required else f.default
        found.append(Param(f.name, _kind(hints[f.name]), required, default, **meta))
    return tuple(found)


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")


def parse_duration(value: object, field: str) -> float:
    """Seconds for ``30d``, ``12h``, ``45m``, ``90s`` or a number; else ``invalid_params``."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    if isinstance(value, str):
        m = _DURATION.match(value)
        if m:
            return float(m.group(1)) * _UNITS[m.group(2) or "s"]
    raise InvalidParams(
        f"'{field}' must be a duration such as 30d, 12h, 45m or a number of seconds",
        {"field": field},
    )


def _invalid(name: str, problem: str) -> InvalidParams:
    return InvalidParams(f"'{name}' {problem}", {"field": name})


def _value(p: Param, value: Any) -> Any:
    """``value`` of param ``p``, checked (lists become tuples); None means not given."""
    if p.kind == "dir":
        if value is None and not p.required:
            return None
        if not isinstance(value, str) or not value:
            raise _invalid(p.name, "must be a directory path")
        return value
    if p.kind == "dirs":
        many = value if isinstance(value, list) else [value]
        if not many or not all(isinstance(d, str) and d for d in many):
            raise _invalid(p.name, "must be a directory path or a list of them")
        return tuple(many)
    if value is None:
        if p.required:
            raise _invalid(p.name, "is required")
        return p.default
    if p.choices and value not in p.choices:
        raise _invalid(p.name, f"must be one of: {', '.join(p.choices)}")
    if p.kind == "string":
        if not isinstance(value, str):
            raise _invalid(p.name, "must be a string")
        if p.required and not value.strip():
            raise _invalid(p.name, "must not be empty")
        if p.max_len is not None and len(value) > p.max_len:
            raise _invalid(p.name, f"is {len(value):,} characters; the limit is {p.max_len:,}")
    elif p.kind == "integer":
        if isinstance(value, bool) or not isinstance(value, int) or not p.lo <= value <= p.hi:  # type: ignore[operator]
            raise _invalid(p.name, f"must be an integer from {p.lo} to {p.hi}")
    elif p.kind == "boolean" and not isinstance(value, bool):
        raise _invalid(p.name, "must be true or false")
    elif p.kind == "strings":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise _invalid(p.name, "must be a list of strings")
        return tuple(value)
    elif p.kind == "mapping" and not isinstance(value, dict):
        raise _invalid(p.name, "must be a mapping")
    elif p.kind == "duration":
        parse_duration(value, p.name)
    return value


D = TypeVar("D")


def decode(decl: type[D], given: Mapping[str, Any]) -> D:
    """The request ``given`` makes, or ``invalid_params``: unknown params first, then the
    first bad field in declaration order."""
    known = params(decl)  # type: ignore[arg-type]
    extra = sorted(set(given) - {p.name for p in known})
    if extra:
        raise InvalidParams(f"unknown parameter(s): {', '.join(extra)}", {"fields": extra})
    return decl(**{p.name: _value(p, given.get(p.name)) for p in known})
