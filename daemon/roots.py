"""The folders the daemon watches, where each one came from, and which may be forgotten.

A root is *permanent* when the user declared it (the config, Claude Code's
folders, ``serve --root``) or asked for it with ``watch``; a folder a request
merely names is a *request* root, forgotten after an idle time. Only
``request`` and ``watch`` roots are stored in the index; the others are
declared again at every start. A root holds every origin it was given:
dropping one (idle, out of the config) keeps it while another holds it;
``unwatch`` drops them all.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer

Origin = Literal["configured", "claude", "default", "serve", "watch", "request"]

RANK: tuple[Origin, ...] = ("configured", "claude", "default", "serve", "watch", "request")
"""Origins, strongest first: a root with several is shown with the first it holds."""

PERSISTED: tuple[Origin, ...] = ("watch", "request")
"""Origins stored in the index, strongest first; the others come from the command line or config."""

TOUCH_RESOLUTION_S = 60.0
"""A request root's last use is recorded (and written to the index) at most this often."""


@dataclass(frozen=True)
class Root:
    path: str
    origins: frozenset[Origin]
    last_used: float

    @property
    def origin(self) -> Origin:
        """The strongest reason it is watched (what ``status`` shows)."""
        return next(o for o in RANK if o in self.origins)

    @property
    def stored(self) -> Origin | None:
        """The origin its ``roots`` row records, or None: it is declared again at start only."""
        return next((o for o in PERSISTED if o in self.origins), None)


def under(directory: str, root: str) -> bool:
    return directory == root or directory.startswith(root.rstrip("/") + "/")


class RootSet:
    """Thread-safe map of root path -> origins and, for request roots, when last used.

    ``clock`` (wall-clock seconds) says when a root is used; tests pass their own.
    """

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._roots: dict[str, Root] = {}
        self._lock = threading.Lock()

    def paths(self) -> list[str]:
        with self._lock:
            return list(self._roots)

    def get(self, path: str) -> Root | None:
        with self._lock:
            return self._roots.get(path)

    def covering(self, directory: str) -> str | None:
        """The root ``directory`` is in (itself or an ancestor), if any."""
        with self._lock:
            return next((r for r in self._roots if under(directory, r)), None)

    def syncer(self, store: IndexStore, **options: Any) -> Syncer:
        """A :class:`Syncer` that follows symlinked files only within their own root."""
        return Syncer(store, root_of=self.covering, **options)

    def add(self, path: str, origin: Origin, last_used: float | None = None) -> Root:
        """Record ``path`` with ``origin`` besides any origins it already has."""
        with self._lock:
            known = self._roots.get(path)
            if last_used is None:
                last_used = self.clock() if known is None else known.last_used
            origins = frozenset({origin}) | (known.origins if known else frozenset())
            root = self._roots[path] = Root(path, origins, last_used)
            return root

    def remove(self, path: str, origin: Origin | None = None) -> Root | None:
        """Drop ``origin`` from ``path`` (None: all); the root if another origin still holds it."""
        with self._lock:
            known = self._roots.pop(path, None)
            if known is None or origin is None or known.origins == {origin}:
                return None
            root = self._roots[path] = Root(path, known.origins - {origin}, known.last_used)
            return root

    def touch(self, path: str) -> Root | None:
        """Note that a request used ``path`` now; returns the root when that is worth saving."""
        now = self.clock()
        with self._lock:
            root = self._roots.get(path)
            if root is None or "request" not in root.origins:
                return None
            if now - root.last_used < TOUCH_RESOLUTION_S:
                return None
            self._roots[path] = Root(path, root.origins, now)
            return self._roots[path]

    def over_limit(self, origin: Origin, limit: int, keep: str) -> list[str]:
        """The least recently used roots holding ``origin`` past ``limit`` (never ``keep``)."""
        with self._lock:
            ranked = sorted(
                (r for r in self._roots.values() if origin in r.origins and r.path != keep),
                key=lambda r: r.last_used,
            )
        return [r.path for r in ranked[: max(0, len(ranked) + 1 - limit)]]

    def idle(self, idle_seconds: float, now: float) -> list[str]:
        """Roots held by a request origin not used for ``idle_seconds``."""
        with self._lock:
            return [
                r.path
                for r in self._roots.values()
                if "request" in r.origins and now - r.last_used > idle_seconds
            ]
