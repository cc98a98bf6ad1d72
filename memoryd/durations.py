"""``30d``, ``12h``, ``45m``, ``90s`` (or a bare number of seconds) to seconds."""

from __future__ import annotations

import re

from memoryd.errors import InvalidParams

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")


def parse_duration(value: object, field: str) -> float:
    """Seconds for ``value``; ``invalid_params`` naming ``field`` when it is not a duration."""
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
