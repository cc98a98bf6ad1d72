"""The roots' watches: watchdog events as hints, collected, settled and handed on.

An event is a hint (both ends of a move, only ``*.md`` files and directories);
after ``settle`` seconds of quiet the batch goes to its sink, which re-states
every path from disk. All roots share two observers (inotify, polling); a root
that would take memoryd past :func:`inotify_budget`, or hits a kernel limit, is polled.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import structlog
from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirModifiedEvent,
    DirMovedEvent,
    EventsLostEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)

from memoryd.daemon.pruned_watch import Budget, inotify_observer, polling_observer
from memoryd.indexer.scanner import is_memory_filename

if TYPE_CHECKING:
    from memoryd.config import Config

WatcherMode = Literal["inotify", "polling", "missing"]  # missing: its directory is gone

log = structlog.get_logger("memoryd.watcher")

MAX_WAIT = 0.5  # a steady stream of events is still flushed this often
POLL_S = 1.0

_LIMIT_ERRNOS = {errno.ENOSPC, errno.EMFILE, errno.ENFILE}
_WATCHES = "/proc/sys/fs/inotify/max_user_watches"


def inotify_budget(limits: str = _WATCHES) -> int:
    """How many inotify watches (directories) memoryd may use: half of the user's."""
    try:
        with open(limits, encoding="ascii") as fh:
            watches = int(fh.read().strip())
    except (OSError, ValueError):
        watches = 8192  # the kernel's old default
    return max(1, watches // 2)


CONTENT_EVENTS: list[type[FileSystemEvent]] = [
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileClosedEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirModifiedEvent,
    DirMovedEvent,
    EventsLostEvent,
]
"""The inotify mask: the events that can change what is on disk, and the one that says some
were lost (the root is then rescanned); reading a watched folder wakes nothing."""


def split_batch(batch: dict[str, bool]) -> tuple[set[str], set[str]]:
    """``(paths to reconcile, directories to list)`` out of a debounced batch; a directory
    whose file's own event came with it needs no listing."""
    paths = {path for path, listing in batch.items() if not listing}
    parents = {os.path.dirname(path) for path in paths}
    return paths, {path for path in batch if path not in paths and path not in parents}


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: Watcher, root: str) -> None:
        self.watcher = watcher
        self.root = root

    def on_any_event(self, event: FileSystemEvent) -> None:
        # "Directory modified": its entries changed; it asks only for the names to be listed.
        lost = isinstance(event, EventsLostEvent)  # its path is the root's, not a change
        paths = [] if lost else [os.fsdecode(event.src_path), os.fsdecode(event.dest_path)]
        hinted = [
            path
            for path in paths
            if path and (event.is_directory or is_memory_filename(os.path.basename(path)))
        ]
        listing = isinstance(event, DirModifiedEvent)
        self.watcher.received(self.root, hinted, listing, lost=lost)


class Watcher:
    """Two shared observers for all roots; a debounce thread hands ``on_paths(paths, listed)``
    the paths to reconcile and the directories whose names alone changed."""

    def __init__(
        self,
        on_paths: Callable[[set[str], set[str]], None],
        *,
        settle: float = 0.05,
        inotify_watches: int | None = None,
    ) -> None:
        self.on_paths = on_paths
        self._lost: set[str] = set()
        self.settle = settle
        self.inotify_watches = inotify_budget() if inotify_watches is None else inotify_watches
        self._dirs: dict[str, int] = {}  # root -> the inotify watches it took
        self.modes: dict[str, WatcherMode] = {}
        self.notes: dict[str, str] = {}  # root -> why it is polled
        self.last_event: float | None = None
        self.events_received = 0  # every event that reached Python, kept or not
        self._shared: dict[WatcherMode, Any] = {}  # mode -> its observer
        self._watches: dict[str, tuple[Any, Any]] = {}  # root -> (observer, watch)
        self._identity: dict[str, tuple[int, int]] = {}  # root -> (device, inode) watched
        self._lock = threading.RLock()  # every change to and walk over the watches
        self._pending: dict[str, bool] = {}  # path -> only its listing changed
        self._first_pending = 0.0
        self._cond = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._deliver, name="watch-debounce", daemon=True)
        self._thread.start()

    def mode_of(self, root: str) -> tuple[WatcherMode | None, str | None]:
        """How ``root`` is watched now (None: not at all) and why it is polled, if it is; read
        without the lock, which a set-up holds through a tree walk."""
        return self.modes.get(root), self.notes.get(root)

    def reconfigure(self, cfg: Config) -> None:
        self.settle = cfg.settle_ms / 1000

    def add_root(self, root: str) -> WatcherMode:
        with self._lock:
            return self._add_root(root)

    def _add_root(self, root: str) -> WatcherMode:
        if root in self._watches:
            return self.modes[root]
        # Taken first: a folder swapped in while the watch is set up is noticed as replaced.
        st = os.stat(root)
        handler = _Handler(self, root)
        in_use = sum(self._dirs.values())
        budget, note = Budget(self.inotify_watches - in_use), None
        try:  # the set-up's own walk counts the watches it takes against what is left
            with budget:
                observer = self._observer("inotify")
                watch = observer.schedule(
                    handler, root, recursive=True, event_filter=CONTENT_EVENTS
                )
        except OSError as exc:
            if exc.errno not in _LIMIT_ERRNOS:
                raise
            note = f"inotify refused it ({os.strerror(exc.errno)})"
            if budget.taken > budget.limit:
                note = (
                    f"its directories would take memoryd past {self.inotify_watches:,} inotify "
                    f"watches ({in_use:,} in use; half the user's, the rest left to others)"
                )
        mode: WatcherMode = "inotify"
        if note is not None:
            note += f"; polled every {POLL_S:g} s instead"
            log.warning("watcher.polling_fallback", root=root, reason=note)
            observer = self._observer("polling")
            watch = observer.schedule(handler, root, recursive=True, event_filter=CONTENT_EVENTS)
            mode = "polling"
            self.notes[root] = note
        else:
            self.notes.pop(root, None)
            self._dirs[root] = budget.taken
        self._watches[root] = (observer, watch)
        self._identity[root] = (st.st_dev, st.st_ino)
        self.modes[root] = mode
        return mode

    def _observer(self, mode: WatcherMode) -> Any:
        """The running observer shared by every root of ``mode`` (a new one if it died)."""
        observer: Any = self._shared.get(mode)
        if observer is None or not observer.is_alive():
            observer = inotify_observer() if mode == "inotify" else polling_observer(POLL_S)
            observer.start()
            self._shared[mode] = observer
        return observer

    def dead_roots(self) -> list[str]:
        """Roots whose observer or emitter thread died (the daemon then recrawls them)."""
        with self._lock:
            dead = []
            for root, (observer, watch) in self._watches.items():
                emitter = next((e for e in observer.emitters if e.watch == watch), None)
                if not observer.is_alive() or emitter is None or not emitter.is_alive():
                    dead.append(root)
            return dead

    def returned_roots(self) -> list[str]:
        """Roots marked ``missing`` whose directory exists again (to watch and rescan now)."""
        with self._lock:
            missing = [root for root, mode in self.modes.items() if mode == "missing"]
        return [root for root in missing if os.path.isdir(root)]

    def lost_roots(self) -> list[str]:
        """Roots whose events the kernel dropped since the last call (to rescan now), once each."""
        with self._cond:
            lost, self._lost = self._lost, set()
        return sorted(root for root in lost if root in self._watches)

    def replaced_roots(self) -> list[str]:
        """Watched roots whose path now names another directory (device, inode) or none."""
        with self._lock:
            watched = list(self._identity.items())
        replaced = []
        for root, identity in watched:
            try:
                st = os.stat(root)
            except OSError:
                replaced.append(root)
                continue
            if (st.st_dev, st.st_ino) != identity:
                replaced.append(root)
        return replaced

    def restart(self, root: str) -> WatcherMode | None:
        """Watch a root afresh; one that cannot be watched is marked ``missing``, one
        removed meanwhile stays removed (None)."""
        with self._lock:
            if root not in self.modes:
                return None
            self._unschedule(root, keep_mode=True)
            try:
                return self._add_root(root)
            except OSError as exc:
                log.warning("watcher.root_unwatchable", root=root, reason=exc.strerror or str(exc))
                self.modes[root] = "missing"
                self.notes.pop(root, None)
                return "missing"

    def remove_root(self, root: str) -> None:
        with self._lock:
            self._unschedule(root)

    def _unschedule(self, root: str, keep_mode: bool = False) -> None:
        """Stop the root's watch; ``keep_mode``: it is set up again at once (a restart)."""
        if not keep_mode:
            self.modes.pop(root, None)
            self.notes.pop(root, None)
        self._dirs.pop(root, None)
        self._identity.pop(root, None)
        entry = self._watches.pop(root, None)
        if entry is not None:
            observer, watch = entry
            with contextlib.suppress(KeyError):  # its emitter already ended (root deleted)
                observer.unschedule(watch)

    def stop(self) -> None:
        with self._lock:
            observers = list(self._shared.values())
        for observer in observers:
            observer.stop()
        for observer in observers:
            observer.join(timeout=2)
        with self._cond:
            self._stopping = True
            self._cond.notify()
        self._thread.join(timeout=2)

    def received(self, root: str, paths: list[str], listing: bool, *, lost: bool) -> None:
        """An event of ``root``'s watch: its ``paths`` (``listing``: only their names changed)
        hinted, or (``lost``) the kernel's word that some were dropped."""
        now = time.monotonic()
        with self._cond:
            self.events_received += 1
            if lost:
                self._lost.add(root)
            for path in paths:
                if not self._pending:
                    self._first_pending = now
                self._pending[path] = self._pending.get(path, True) and listing
                self.last_event = time.time()
                self._cond.notify()

    def _deliver(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._stopping:
                    self._cond.wait()
                if self._stopping:
                    return
                # Wait for a quiet period, but not forever under a steady stream.
                while True:
                    size = len(self._pending)
                    deadline = self._first_pending + MAX_WAIT
                    self._cond.wait(min(self.settle, max(0.0, deadline - time.monotonic())))
                    if len(self._pending) == size or time.monotonic() >= deadline:
                        break
                batch, self._pending = self._pending, {}
            paths, listed = split_batch(batch)
            try:
                self.on_paths(paths, listed)
            except Exception:
                log.exception("watcher.delivery_failed", paths=len(batch))
