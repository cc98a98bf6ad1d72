"""Observers that never watch a skipped directory below a root (``node_modules``, ``.git``, venvs).

Both observers list directories by the scan's own rule
(:func:`~memoryd.indexer.scanner.is_skipped_dir`). A root set up within a
:class:`Budget` takes at most that many inotify watches; past it, the
set-up fails with ``ENOSPC``.
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Iterator
from typing import Any

from watchdog.observers.inotify import InotifyEmitter, InotifyObserver, InotifyWatchGroup
from watchdog.observers.polling import PollingObserverVFS

from memoryd.indexer.scanner import is_skipped_dir, skipped_below


def kept_subdirectories(root: str) -> Iterator[str]:
    """Every real directory below ``root`` that is neither skipped nor under a skipped one."""
    stack = [root]
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                found = [e for e in entries if _is_real_dir(e)]
        except OSError:
            continue
        for entry in found:
            if not is_skipped_dir(entry.name, entry.path):
                stack.append(entry.path)
                yield entry.path


class Budget:
    """The inotify watches one root's set-up may take, and how many it took; within ``with``,
    the set-up on this thread counts against it."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.taken = 0

    def take(self) -> None:
        self.taken += 1
        if self.taken > self.limit:
            raise OSError(errno.ENOSPC, f"more than {self.limit:,} directories to watch")

    def __enter__(self) -> Budget:
        _setting_up.budget = self
        return self

    def __exit__(self, *exc: object) -> None:
        _setting_up.budget = None


_setting_up = threading.local()


def _is_real_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _scandir_pruned(path: str | None) -> Iterator[os.DirEntry[str]]:
    """``os.scandir`` without the skipped directories (the polling observer's listing)."""
    with os.scandir(path) as entries:
        for entry in entries:
            if not (_is_real_dir(entry) and is_skipped_dir(entry.name, entry.path)):
                yield entry


def polling_observer(interval: float) -> Any:
    return PollingObserverVFS(os.stat, _scandir_pruned, polling_interval=interval)


def inotify_observer() -> Any:
    observer = InotifyObserver()
    observer._emitter_class = _PrunedEmitter  # the one class its schedule() builds
    return observer


class _PrunedGroup(InotifyWatchGroup):
    """watchdog's watch group, walking only the directories the scan walks."""

    def _add_all_callbacks(self, path: bytes) -> None:
        text = os.fsdecode(path)
        if skipped_below(os.fsdecode(self.path), text):  # a new directory in a skipped one
            return
        # The set-up (not yet active) counts against the root's budget.
        budget = None if self.is_active else getattr(_setting_up, "budget", None)
        take = budget.take if budget is not None else lambda: None
        take()
        self._add_callback(path)
        if self.is_recursive and os.path.isdir(path):
            for directory in kept_subdirectories(text):
                take()
                self._add_callback(os.fsencode(directory))

    def _recursive_simulate(self, src_path: bytes) -> list[Any]:
        if skipped_below(os.fsdecode(self.path), os.fsdecode(src_path)):
            return []
        return super()._recursive_simulate(src_path)


class _PrunedEmitter(InotifyEmitter):
    def on_thread_start(self) -> None:
        self._inotify = _PrunedGroup(
            self._inotify_fd,
            os.fsencode(self.watch.path),
            is_recursive=self.watch.is_recursive,
            event_mask=self.get_event_mask_from_filter(),
            follow_symlink=self.watch.follow_symlink,
        )
