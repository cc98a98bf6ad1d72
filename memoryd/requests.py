"""Directory params resolved: a real absolute path that exists, or ``invalid_params``."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable

from memoryd.errors import InvalidParams, RequestError
from memoryd.paths import escaped, name_problem


def directory(
    raw: str, key: str = "dir", *, missing: Callable[[str], RequestError] | None = None
) -> str:
    """A decoded directory param resolved to a real absolute path that exists; ``missing``
    builds the error for a path that is not a directory when the method names another."""
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
    """``raw`` (``~`` expanded) with every symlink resolved; ``invalid_params`` naming the
    field when it cannot be (a link the daemon may not read)."""
    if "\x00" in raw:
        raise InvalidParams(f"'{key}' must not contain a NUL byte", {"field": key})
    try:
        return os.path.realpath(os.path.expanduser(raw))
    except OSError as exc:
        raise InvalidParams(
            f"'{key}': cannot resolve {escaped(raw)}: {exc.strerror or exc}", {"field": key}
        ) from None


RESOLVED_TTL_S = 1.0
_RESOLVED_MAX = 512


class ResolvedDirs:
    """:func:`directory` for a busy reader, without a ``realpath`` walk per request.

    A resolution is reused while ``raw`` and the resolved path still ``stat`` as the same
    directory (a re-pointed link or a removed folder is seen at once), for at most
    :data:`RESOLVED_TTL_S` (a rename further up). ``save`` resolves in full every time.
    """

    def __init__(self) -> None:
        self._known: dict[str, tuple[str, int, int, float]] = {}

    def directory(self, raw: str, key: str = "dir") -> str:
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
