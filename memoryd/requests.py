"""Request validation: typed access to a method's params; every mistake names the field.

It sits beside the operations rather than in ``ipc/``: the daemon's handlers,
the CLI's in-process fallback and the typed requests all parse params the same
way, and none of that is the wire. Handlers call these instead of indexing
``params`` directly, so a wrong type always becomes ``invalid_params`` with a message such as
``'limit' must be an integer from 1 to 5``, never a ``KeyError`` traceback.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from memoryd.errors import InvalidParams, RequestError
from memoryd.paths import escaped, name_problem


def reject_unknown(params: Mapping[str, Any], allowed: Iterable[str]) -> None:
    extra = sorted(set(params) - set(allowed))
    if extra:
        raise InvalidParams(f"unknown parameter(s): {', '.join(extra)}", {"fields": extra})


def string(
    params: Mapping[str, Any],
    key: str,
    *,
    required: bool = False,
    max_len: int | None = None,
    default: str | None = None,
) -> str | None:
    value = params.get(key)
    if value is None:
        if required:
            raise InvalidParams(f"'{key}' is required", {"field": key})
        return default
    if not isinstance(value, str):
        raise InvalidParams(f"'{key}' must be a string", {"field": key})
    if required and not value.strip():
        raise InvalidParams(f"'{key}' must not be empty", {"field": key})
    if max_len is not None and len(value) > max_len:
        raise InvalidParams(
            f"'{key}' is {len(value):,} characters; the limit is {max_len:,}", {"field": key}
        )
    return value


def required_string(params: Mapping[str, Any], key: str, *, max_len: int | None = None) -> str:
    value = string(params, key, required=True, max_len=max_len)
    assert value is not None
    return value


def string_list(params: Mapping[str, Any], key: str) -> list[str]:
    value = params.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidParams(f"'{key}' must be a list of strings", {"field": key})
    return list(value)


def integer(
    params: Mapping[str, Any], key: str, *, default: int, minimum: int, maximum: int
) -> int:
    value = params.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise InvalidParams(
            f"'{key}' must be an integer from {minimum} to {maximum}", {"field": key}
        )
    return value


def choice(params: Mapping[str, Any], key: str, options: tuple[str, ...], default: str) -> str:
    value = params.get(key, default)
    if value not in options:
        raise InvalidParams(f"'{key}' must be one of: {', '.join(options)}", {"field": key})
    return str(value)


def boolean(params: Mapping[str, Any], key: str, *, default: bool = False) -> bool:
    value = params.get(key, default)
    if not isinstance(value, bool):
        raise InvalidParams(f"'{key}' must be true or false", {"field": key})
    return value


def directory(
    raw: Any, key: str = "dir", *, missing: Callable[[str], RequestError] | None = None
) -> str:
    """A directory param resolved to a real absolute path that exists.

    ``missing`` builds the error for a path that is not a directory, for methods
    whose contract names a different one (``save``: ``not_found``).
    """
    if not isinstance(raw, str) or not raw:
        raise InvalidParams(f"'{key}' must be a directory path", {"field": key})
    path = real_path(raw, key)
    problem = name_problem(path)
    if problem is not None:
        raise InvalidParams(
            f"'{key}': {escaped(raw)} resolves to a path that {problem}: {escaped(path)}",
            {"field": key},
        )
    if missing is not None and not os.path.isdir(path):
        raise missing(raw)
    if not os.path.exists(path):
        raise InvalidParams(f"'{key}': memory directory not found: {raw}", {"field": key})
    if not os.path.isdir(path):
        raise InvalidParams(f"'{key}': not a directory: {raw}", {"field": key})
    return path


def real_path(raw: str, key: str = "dir") -> str:
    """``raw`` (``~`` expanded) with every symlink resolved; ``invalid_params`` if it cannot be.

    Resolving reads each link on the way: a link the daemon may not read
    (another user's ``/proc/<pid>/cwd``) raises there, which names the field
    and the reason instead of becoming ``internal``.
    """
    if "\x00" in raw:
        raise InvalidParams(f"'{key}' must not contain a NUL byte", {"field": key})
    try:
        return os.path.realpath(os.path.expanduser(raw))
    except OSError as exc:
        raise InvalidParams(
            f"'{key}': cannot resolve {escaped(raw)}: {exc.strerror or exc}", {"field": key}
        ) from None


RESOLVED_TTL_S = 1.0
"""How long a cached resolution is trusted, on top of its per-call identity check."""

_RESOLVED_MAX = 512


class ResolvedDirs:
    """:func:`directory` for a busy reader, without a ``realpath`` walk per request.

    ``realpath`` costs an ``lstat`` per path component, and each system call
    lets another request thread take the interpreter: at a thousand selects a
    second that dominated the work outside ranking. A resolution is reused
    while two ``stat`` calls show it still holds: ``raw`` (symlinks followed)
    is the same directory as before, so a re-pointed link or a removed folder
    is seen at once, and the resolved path (last component not followed) is
    still that directory itself, not a link to it. A rename further up that
    keeps both true is picked up within :data:`RESOLVED_TTL_S`. Only reads use
    this; ``save`` resolves its directory in full every time.
    """

    def __init__(self) -> None:
        self._known: dict[str, tuple[str, int, int, float]] = {}

    def directory(self, raw: Any, key: str = "dir") -> str:
        if isinstance(raw, str):
            known = self._known.get(raw)
            if known is not None and self._still(raw, known):
                return known[0]
        path = directory(raw, key)
        try:
            st = os.stat(path)
        except OSError:
            return path
        if len(self._known) >= _RESOLVED_MAX:
            self._known.clear()
        self._known[raw] = (path, st.st_dev, st.st_ino, time.monotonic())
        return path

    @staticmethod
    def _still(raw: str, known: tuple[str, int, int, float]) -> bool:
        path, dev, ino, at = known
        if time.monotonic() - at > RESOLVED_TTL_S:
            return False
        try:
            here = os.stat(os.path.expanduser(raw))
            real = os.lstat(path)
        except OSError:
            return False
        return (
            stat.S_ISDIR(real.st_mode)
            and (here.st_dev, here.st_ino) == (dev, ino)
            and (real.st_dev, real.st_ino) == (dev, ino)
        )
