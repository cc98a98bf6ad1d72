"""The folders the daemon watches: where each came from, its watch, its ``roots`` row.

A root is *permanent* when the user declared it (the config, Claude Code's
folders, ``serve --root``) or asked with ``watch``; a folder a request merely
names is a *request* root, forgotten after an idle time. Only ``request`` and
``watch`` roots are stored in the index. A root holds every origin it was
given: dropping one keeps it while another holds it; ``unwatch`` drops all.
:class:`WatchedRoots` keeps the :class:`RootSet`, the watches and the rows in
step; :func:`hint_sink` turns the watcher's batches into writer jobs.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Literal, cast

import structlog

from memoryd import requests, system_trees
from memoryd.config import Config
from memoryd.daemon.watcher import Watcher
from memoryd.daemon.writer import Writer
from memoryd.errors import InvalidParams
from memoryd.indexer import recovery
from memoryd.indexer.scanner import empty_folder_note, is_memory_folder
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.paths import escaped, name_problem
from memoryd.replies import Watched

log = structlog.get_logger("memoryd.daemon")

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
    """Thread-safe map of root path -> origins and, for request roots, when last used."""

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


def _refusal(root: str) -> str | None:
    """Why ``root`` (resolved) can never be a root: a bad name, a system or too broad folder."""
    problem = name_problem(root)
    return f"the path {problem}" if problem else system_trees.refusal(root)


def hint_sink(writer: Writer, root_set: RootSet) -> Callable[[set[str], set[str]], None]:
    """The watcher's batches as writer jobs: each path re-stated, each listing compared."""

    def queue(paths: set[str], listed: set[str]) -> None:
        steps = [("sync_path", p) for p in sorted(paths)]
        steps += [("sync_listing", d) for d in sorted(listed)]

        def job(store: IndexStore) -> None:
            # A path that fails is a bug (a bad file is an error row): logged, the batch goes
            # on. A storage failure stops the job: the writer's repair redoes it all.
            syncer = root_set.syncer(store)
            for step, path in steps:
                try:
                    getattr(syncer, step)(path)
                except Exception as exc:
                    if recovery.trouble(exc) is not None:
                        raise
                    log.exception("watcher.path_failed", path=path)
                    syncer = root_set.syncer(store)  # nothing half-done carried on

        writer.submit(job, hint=True)

    return queue


class WatchedRoots:
    """Every root's watch, record and rows; the one place roots are added or forgotten."""

    def __init__(self, cfg: Config, root_set: RootSet, watcher: Watcher, writer: Writer) -> None:
        self._root_set = root_set
        self._watcher = watcher
        self._writer = writer
        self._resolved = requests.ResolvedDirs()
        self._indexing: dict[str, Future[None]] = {}  # roots whose first scan is under way
        # A root becomes visible to requests together with its pending scan, never before.
        self._visible = threading.Lock()
        self._configured = list(cfg.roots)
        self._max_request_roots = cfg.max_request_roots
        self.idle_seconds = cfg.request_root_idle_days * 86400

    def paths(self) -> list[str]:
        return self._root_set.paths()

    def get(self, path: str) -> Root | None:
        return self._root_set.get(path)

    def root_for(self, directory: str) -> str | None:
        return self._root_set.covering(directory)

    def syncer(self, store: IndexStore, **options: Any) -> Syncer:
        return self._root_set.syncer(store, **options)

    def restore(self, declared: list[tuple[str, Origin]]) -> None:
        """Declared roots, then the remembered ones still wanted (newest first); one inside a
        declared root is dropped (its rows stay, under that root)."""
        for root, origin in declared:
            self.add(root, origin, wait=False)
        now = self._root_set.clock()
        rows = self._writer.call(lambda s: s.root_rows())
        for path, stored, last_used in sorted(rows, key=lambda r: -r[2]):
            origin = cast(Origin, stored)  # the rows hold what save_root wrote: PERSISTED ones
            if origin == "watch" and not os.path.isdir(path):
                log.warning("daemon.root_missing", root=path, origin=origin)
            elif (
                self.root_for(path) in (None, path)
                and os.path.isdir(path)
                and not (origin == "request" and now - last_used > self.idle_seconds)
                and (origin != "request" or is_memory_folder(path))
            ):
                self.add(path, origin, last_used=last_used, wait=False)
            else:  # idle, gone, now inside a declared root, or no memory folder (any more)
                self.forget(path, reason="restart", origin=origin)

    def add(
        self,
        root: str,
        origin: Origin,
        *,
        index: bool = False,
        last_used: float | None = None,
        wait: bool = True,
    ) -> Root | None:
        """Watch ``root`` and record it, and with ``index`` scan it, as one writer job; ``wait``
        for it (a request about to read the folder). A refused write is left to the repair."""
        refused = _refusal(root)
        if refused is not None:
            log.warning("daemon.root_refused", root=escaped(root), reason=refused)
            return None
        if not os.path.isdir(root):
            log.warning("daemon.root_missing", root=root)
            return None

        def record(store: IndexStore) -> None:
            mode = self._watcher.add_root(root)
            log.info("daemon.watching", root=root, mode=mode, origin=entry.origin)
            if entry.stored is not None:
                store.save_root(root, entry.stored, entry.last_used)
            if index:
                self.syncer(store).sync_tree(root)

        with self._visible:
            entry = self._root_set.add(root, origin, last_used)
            future = self._writer.submit(record)
            if index:
                self._indexing[root] = future
                future.add_done_callback(lambda _: self._indexing.pop(root, None))
        if entry.origin == "request":
            self._make_room(keep=root)
        if wait:
            self._wait(root, future)
        return entry

    def _wait(self, root: str, future: Future[None]) -> None:
        """Until ``root``'s watch and scan are done; a write the index refuses is left to repair."""
        try:
            future.result()
        except Exception as exc:
            if recovery.trouble(exc) is None:
                raise
            log.warning("daemon.root_index_deferred", root=root, cause=str(exc))

    def _make_room(self, keep: str) -> None:
        """Forget the least recently used request roots beyond ``max_request_roots``."""
        for root in self._root_set.over_limit("request", self._max_request_roots, keep):
            self.forget(root, "over max_request_roots (least recently used)", origin="request")

    def forget(self, root: str, reason: str, origin: Origin | None = None) -> int:
        """Drop ``origin`` from ``root`` (None: all); with none left, stop watching it and
        drop its rows (those under another root stay). How many rows went."""
        left = self._root_set.remove(root, origin)
        if left is not None:
            stored = left.stored
            self._writer.call(
                lambda s: (
                    s.save_root(root, stored, left.last_used)
                    if stored is not None
                    else s.forget_root(root, keep=[root])
                )
            )
            log.info("daemon.root_kept", root=root, dropped=origin, kept=left.origin, reason=reason)
            return 0
        self._watcher.remove_root(root)
        keep = self._root_set.paths()
        dropped = self._writer.call(lambda s: s.forget_root(root, keep))
        log.info("daemon.root_forgotten", root=root, reason=reason, files=dropped)
        return dropped

    def forget_idle(self) -> None:
        for root in self._root_set.idle(self.idle_seconds, self._root_set.clock()):
            self.forget(root, reason="idle", origin="request")

    def refuse_too_broad(self, path: str, field: str = "dir") -> None:
        """Raise for a directory no request may watch or save into (one inside a root never is)."""
        if self.root_for(path) is not None:
            return
        reason = system_trees.refusal(path)
        if reason is not None:
            raise InvalidParams(f"'{field}': refusing {path}: {reason}", {"field": field})

    def _watch_new(self, path: str, raw: Any, field: str, origin: Origin) -> Root | None:
        try:
            return self.add(path, origin, index=True)
        except OSError as exc:
            raise InvalidParams(
                f"'{field}': cannot watch {raw}: {exc.strerror or exc}", {"field": field}
            ) from None

    def resolve(self, raw: Any, field: str = "dir") -> str:
        """``raw`` checked and resolved to a real directory (cached), nothing watched or touched."""
        return self._resolved.directory(raw, field)

    def ensure_dir(self, raw: Any, field: str = "dir") -> str:
        """Validate a directory param; keep it watched while requests use it (a folder outside
        every root becomes a ``request`` root only when it is a memory folder itself)."""
        path = self.resolve(raw, field)
        with self._visible:
            root = self.root_for(path)
            scanning = self._indexing.get(root) if root is not None else None
        if root is not None:
            if scanning is not None:  # added by a request a moment ago: read it once scanned
                self._wait(root, scanning)
            touched = self._root_set.touch(root)
            if touched is not None:
                self._writer.submit(
                    lambda s: s.save_root(
                        touched.path, touched.stored or "request", touched.last_used
                    ),
                    keep=True,
                )
            return path
        self.refuse_too_broad(path, field)
        if is_memory_folder(path):
            self._watch_new(path, raw, field, "request")
        return path

    def watch_dir(self, raw: Any, field: str = "dir") -> Watched:
        """``watch``: make ``raw`` a permanent root, remembered across restarts; a folder
        with no memories of its own is refused, with what it holds."""
        path = requests.directory(raw, field)
        covering = self.root_for(path)
        known = self._root_set.get(covering) if covering else None
        if known is not None and known.origin != "request":
            return {"dir": path, "root": covering, "added": False, "origin": known.origin}
        self.refuse_too_broad(path, field)
        if not is_memory_folder(path):  # as requests do: only memory folders are watched
            raise InvalidParams(
                f"'{field}': not watched: {empty_folder_note(path)}", {"field": field}
            )
        entry = self._watch_new(path, raw, field, "watch")
        origin = entry.origin if entry else "none"
        return {"dir": path, "root": path, "added": covering != path, "origin": origin}

    def refused(self, roots: tuple[str, ...]) -> str | None:
        """Why a config naming ``roots`` must be refused whole (None: it may be applied);
        checked before a reload changes anything."""
        for root in roots:
            reason = _refusal(os.path.realpath(root))
            if reason is not None:
                return f"roots: refusing {escaped(root)}: {reason}"
        return None

    def reconfigure(self, cfg: Config) -> None:
        """SIGHUP: roots added to the config are watched and indexed, removed ones forgotten."""
        removed = {os.path.realpath(r) for r in self._configured} - {
            os.path.realpath(r) for r in cfg.roots
        }
        self._configured = list(cfg.roots)
        self._max_request_roots = cfg.max_request_roots
        self.idle_seconds = cfg.request_root_idle_days * 86400
        for root in sorted(removed):
            entry = self._root_set.get(root)
            if entry is not None and "configured" in entry.origins:
                self.forget(root, reason="removed from the config", origin="configured")
        for root in cfg.roots:
            real = os.path.realpath(root)
            if self.root_for(real) in (None, real):
                self.add(real, "configured", index=self.get(real) is None, wait=False)
