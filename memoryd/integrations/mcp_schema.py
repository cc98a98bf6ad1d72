"""Tool arguments checked against the tool's own input schema, before any of them is used.

The JSON Schema keywords the tools use, and valid Unicode in every string; the walk follows
the schema, never the data's depth. The first problem is raised as :class:`ArgumentError`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}


class ArgumentError(ValueError):
    """An argument the schema rules out; the message names it and says why."""


def check(schema: Mapping[str, Any], value: object, where: str = "arguments") -> None:
    """Raise :class:`ArgumentError` unless ``value`` satisfies ``schema``."""
    _type(schema, value, where)
    if "enum" in schema and value not in schema["enum"]:
        choices = ", ".join(repr(c) for c in schema["enum"])
        raise ArgumentError(f"{where} must be one of {choices}, not {_shown(value)}")
    if isinstance(value, str):
        _string(schema, value, where)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        _number(schema, value, where)
    elif isinstance(value, list):
        items = schema.get("items")
        for i, item in enumerate(value):
            if items is not None:
                check(items, item, f"{where}[{i}]")
            elif isinstance(item, str):
                _string({}, item, f"{where}[{i}]")
    elif isinstance(value, dict):
        _object(schema, value, where)


def _type(schema: Mapping[str, Any], value: object, where: str) -> None:
    wanted = schema.get("type")
    if wanted is None:
        return
    names = [wanted] if isinstance(wanted, str) else list(wanted)
    for name in names:
        kinds = _TYPES[name]
        fits = isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)
        if fits and (not isinstance(value, float) or math.isfinite(value)):
            return
    wanted_kinds = " or ".join(_article(name) for name in names)
    raise ArgumentError(f"{where} must be {wanted_kinds}, not {_kind(value)}")


def valid_text(text: str) -> bool:
    """False for text holding a lone surrogate (JSON's ``\\ud800``), which no file can hold."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _string(schema: Mapping[str, Any], value: str, where: str) -> None:
    if not valid_text(value):
        raise ArgumentError(f"{where} holds a lone surrogate: text must be valid Unicode")
    if len(value) < schema.get("minLength", 0):
        raise ArgumentError(f"{where} must not be empty" if not value else f"{where} is too short")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        raise ArgumentError(f"{where} is longer than {schema['maxLength']} characters")
    if "pattern" in schema and _compiled(schema["pattern"]).search(value) is None:
        raise ArgumentError(f"{where} does not match {schema['pattern']}: {_shown(value)}")


def _number(schema: Mapping[str, Any], value: float, where: str) -> None:
    if "minimum" in schema and value < schema["minimum"]:
        raise ArgumentError(f"{where} must be at least {schema['minimum']}, not {value}")
    if "maximum" in schema and value > schema["maximum"]:
        raise ArgumentError(f"{where} must be at most {schema['maximum']}, not {value}")


def _object(schema: Mapping[str, Any], value: Mapping[str, object], where: str) -> None:
    properties: Mapping[str, Any] = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    for key in value:
        _string({}, key, f"{where}: a key")
    if extra is False and not value.keys() <= properties.keys():
        unknown = ", ".join(sorted(set(value) - set(properties)))
        known = ", ".join(sorted(properties)) or "none"
        raise ArgumentError(f"{where}: unknown argument(s): {unknown} (known: {known})")
    for key, item in value.items():
        inner = f"{key!r}" if where == "arguments" else f"{where}.{key}"
        if key in properties:
            check(properties[key], item, inner)
        elif isinstance(extra, Mapping):
            check(extra, item, inner)
    missing = [name for name in schema.get("required", []) if value.get(name) is None]
    if missing:
        raise ArgumentError(f"{where}: missing required {', '.join(missing)}")


@lru_cache(maxsize=32)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _kind(value: object) -> str:
    for name, kinds in _TYPES.items():
        if isinstance(value, kinds) and not (isinstance(value, bool) and name != "boolean"):
            return _article(name)
    return type(value).__name__


def _article(name: str) -> str:
    return "null" if name == "null" else f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
