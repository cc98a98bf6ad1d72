"""Typed reads of a config file's values, with every problem kept for one report at the end.

:class:`Values` reads one key at a time; a value of the wrong type or out of
range is noted as a problem and read as its default, so one pass over the
file finds all its mistakes and :meth:`Values.raise_any` reports them in one
:class:`~memoryd.errors.ConfigError` (``path: problem; problem``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

from memoryd.errors import ConfigError


class Values:
    """Typed reads of config values: a wrong type is a problem naming the key.

    YAML reads ``"false"`` as a string and ``.inf``/``.nan`` as floats; coercing
    them (``bool("false")`` is True) would silently turn settings on, so each
    value must already have the type its key needs. A value with a problem
    reads as its default, so that every problem of a file is found in one pass;
    :meth:`raise_any` then reports them all in one :class:`ConfigError`.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.problems: list[str] = []

    def problem(self, text: str) -> None:
        self.problems.append(text)

    def raise_any(self) -> None:
        if self.problems:
            raise ConfigError(f"{self.path}: {'; '.join(self.problems)}")

    def _fail(self, key: str, expected: str, value: object) -> None:
        self.problem(f"'{key}' must be {expected}, got {type(value).__name__} {value!r}")

    def boolean(self, section: Mapping[str, object], key: str, default: bool) -> bool:
        value = section.get(key.rpartition(".")[2], default)
        if not isinstance(value, bool):
            self._fail(key, "true or false (unquoted)", value)
            return default
        return value

    def number(
        self,
        section: Mapping[str, object],
        key: str,
        default: float,
        *,
        integer: bool = False,
        minimum: float | None = None,
        maximum: float | None = None,
    ) -> float:
        value = section.get(key.rpartition(".")[2], default)
        expected = "a whole number" if integer else "a positive number"
        ok_type = int if integer else (int, float)
        if isinstance(value, bool) or not isinstance(value, ok_type) or not math.isfinite(value):
            self._fail(key, expected, value)
            return float(default)
        low = (value < minimum) if minimum is not None else (value <= 0)
        if low or (maximum is not None and value > maximum):
            bound = f"at least {minimum:g}" if minimum is not None else "positive"
            if maximum is not None:
                bound = f"from {minimum or 0:g} to {maximum:g}"
            self.problem(f"'{key}' must be {bound}, got {value!r}")
            return float(default)
        return float(value)

    def text(self, section: Mapping[str, object], key: str, default: str | None) -> str | None:
        value = section.get(key.rpartition(".")[2], default)
        if value is not None and not isinstance(value, str):
            self._fail(key, "a string", value)
            return default
        return value
