"""Make the index equal to the disk, reading only what changed.

A file whose ``(mtime_ns, size, inode)`` matches its row is not read; equal bytes
only refresh the stat; rows of files gone are deleted; files that could not be
read are retried on every pass. A pass over an unchanged tree writes nothing.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import chain
from typing import Protocol

from memoryd.file_entries import FileError, SyncCounts
from memoryd.indexer.parse import classify, parse_file
from memoryd.indexer.records import (
    ERROR_READ,
    Change,
    Delete,
    FileStat,
    ParsedFile,
    Row,
    StoredStat,
    Touch,
    Upsert,
    file_row,
)
from memoryd.indexer.scanner import (
    Listing,
    is_memory_filename,
    skipped_below,
    stat_entry,
    stat_path,
    walk_dirs,
)
from memoryd.indexer.store import IndexStore
from memoryd.paths import escaped

BATCH_SIZE = 500

_STABLE_READS = 3
"""How many times a file that changes while being read is read again."""


def read_file(st: FileStat, within: str | None = None) -> tuple[FileStat, ParsedFile]:
    """Read and parse ``st.path`` (see :func:`parse_file`), with the stat taken after.

    A file that changed while being read (still being written) is read again, a
    few times at most. A path that could not be stat'ed is a read error.
    """
    if st.stat_error is not None:
        error = ParsedFile(
            kind=classify(st.filename), content_hash="", error=st.stat_error, error_kind=ERROR_READ
        )
        return st, error
    for _ in range(_STABLE_READS):
        parsed = parse_file(st.path, st.filename, st.size, within)
        if _unchanged(st):
            break
        after = stat_path(st.path)
        if after is None or after.signature == st.signature:
            break
        st = after
    return st, parsed


def _unchanged(st: FileStat) -> bool:
    """The common case of the check after a read, without building a new record."""
    try:
        now = os.stat(st.path)
    except OSError:
        return False
    return (now.st_mtime_ns, now.st_size, now.st_ino) == st.signature and stat.S_ISREG(now.st_mode)


class Progress(Protocol):
    """Told of each file a full scan has reconciled."""

    def advance(self) -> None: ...


@dataclass
class SyncResult:
    """Counts of what one pass did (the caller fills ``errors`` from the index)."""

    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    rows_written: int = 0
    seconds: float = 0.0
    errors: list[FileError] = field(default_factory=list)
    stopped: bool = False
    """The pass was abandoned (the daemon is stopping); the next full pass completes it."""

    @property
    def changed(self) -> int:
        return self.added + self.updated + self.removed

    def to_json(self) -> SyncCounts:
        return {
            "added": self.added,
            "updated": self.updated,
            "removed": self.removed,
            "unchanged": self.unchanged,
            "errors": self.errors,
            "seconds": round(self.seconds, 4),
        }


class Syncer:
    """Plans changes per directory and writes them in batches through one store.

    ``should_stop`` is asked before each directory of a full scan; ``root_of``
    names the root a path is under (symlinks are followed only inside it).
    """

    def __init__(
        self,
        store: IndexStore,
        progress: Progress | None = None,
        should_stop: Callable[[], bool] = lambda: False,
        root_of: Callable[[str], str | None] = lambda path: None,
    ) -> None:
        self.store = store
        self.root_of = root_of
        self._advance = progress.advance if progress is not None else lambda: None
        self.should_stop = should_stop
        self._pending: list[Change] = []
        self._result = SyncResult()

    def sync_trees(
        self, roots: list[str], listed: Mapping[str, Listing] | None = None
    ) -> SyncResult:
        """Reconcile several roots (``listed``: trees already walked, by root); one result."""
        started = time.perf_counter()
        fresh = self.store.is_empty()
        for root in roots:
            self._tree(root, fresh, (listed or {}).get(root))
            self._flush()
            if self._result.stopped:
                break
        return self._finish(started)

    def sync_tree(self, root: str) -> SyncResult:
        """Reconcile ``root`` and everything below it (full stat scan)."""
        return self.sync_trees([root])

    def _tree(self, root: str, fresh: bool, listed: Listing | None) -> None:
        seen: set[str] = set()
        boundary = self._boundary(root, root)
        stats = self._stats(walk_dirs(root) if listed is None else listed, seen, boundary)
        if fresh:
            self._load_fresh(stats, boundary)
        else:
            for directory, disk in stats:
                self._reconcile_dir(directory, disk, boundary)
        if self._result.stopped:
            return  # not every directory was seen: deleting the "unseen" ones' rows would be wrong
        for directory in self.store.directories_under(root):
            if directory not in seen:
                self._reconcile_dir(directory, {}, boundary)

    def _stats(
        self, listed: Listing, seen: set[str], boundary: str
    ) -> Iterator[tuple[str, dict[str, FileStat]]]:
        """Each directory of the tree with its memory files' stats, until told to stop."""
        for directory, listing in listed:
            entries = [e for e in listing if is_memory_filename(e.name)]
            if self.should_stop():
                self._result.stopped = True
                return
            key = escaped(directory)
            seen.add(key)
            stats = (stat_entry(e, directory, boundary) for e in entries)
            yield key, {st.path: st for st in stats if st is not None}

    def sync_path(self, path: str) -> SyncResult:
        """Reconcile one path a watcher reported: a file, a directory, or nothing (a path
        in a directory the scan skips below its root counts as nothing)."""
        started = time.perf_counter()
        root = self.root_of(path)
        skipped = root is not None and skipped_below(root, path)
        if not skipped and os.path.isdir(path) and not os.path.islink(path):
            return self.sync_tree(path)
        key = escaped(path)
        boundary = self._boundary(path, os.path.dirname(path))
        if is_memory_filename(os.path.basename(path)):
            st = None if skipped else stat_path(path, boundary)
            self._reconcile_one(st, key, self.store.stat_of(key), boundary)
        # A vanished (or skipped) directory: drop everything that was indexed below it.
        if skipped or not os.path.lexists(path):
            for directory in self.store.directories_under(key):
                self._reconcile_dir(directory, {}, boundary)
        return self._finish(started)

    def sync_listing(self, directory: str) -> SyncResult:
        """Reconcile the names that appeared or vanished in one directory (one scandir);
        one that vanished or cannot be listed gets :meth:`sync_path`."""
        started = time.perf_counter()
        root = self.root_of(directory)
        skipped = root is not None and skipped_below(root, directory)
        listed = None if skipped else next(walk_dirs(directory), None)
        if listed is None:
            return self.sync_path(directory)
        on_disk = {escaped(e.path): e.path for e in listed[1]}
        stored = self.store.paths_in(escaped(directory))
        boundary = self._boundary(directory, directory)
        for key in sorted(on_disk.keys() - stored):
            self._reconcile_one(stat_path(on_disk[key], boundary), key, None, boundary)
        for path in stored - on_disk.keys():
            self._drop(path)
        return self._finish(started)

    def _boundary(self, path: str, fallback: str) -> str:
        """The real path of the root ``path`` is under (``fallback`` when no root covers it)."""
        return os.path.realpath(self.root_of(path) or fallback)

    def _load_fresh(self, listed: Iterable[tuple[str, dict[str, FileStat]]], within: str) -> None:
        """Index a tree into an empty index (no lookups, one full-text build); a stop
        between directories commits those done, a tree without files writes nothing."""
        now = time.time()

        def rows() -> Iterator[Row]:
            for _directory, disk in listed:
                for st in disk.values():
                    self._result.added += 1
                    self._advance()
                    yield file_row(*read_file(st, within), now)

        pending = rows()
        first = next(pending, None)
        if first is not None:
            self._result.rows_written += self.store.load_fresh(chain([first], pending))

    def _reconcile_dir(self, directory: str, disk: dict[str, FileStat], within: str) -> None:
        stored = self.store.stats_in(directory)
        for path, st in disk.items():
            self._reconcile_one(st, path, stored.pop(path, None), within)
            self._advance()
        for path in stored:
            self._drop(path)

    def _drop(self, path: str) -> None:
        self._queue(Delete(path))
        self._result.removed += 1

    def _reconcile_one(
        self, st: FileStat | None, path: str, old: StoredStat | None, within: str
    ) -> None:
        """Bring one row in line with the disk (``st`` None: nothing there)."""
        res = self._result
        if st is None:
            if old is not None:
                self._drop(path)
            return
        retry = old is not None and (old.error_kind == ERROR_READ or not _readable_now(st, old))
        if old is not None and not retry and st.signature == old.signature:
            res.unchanged += 1
            return
        st, parsed = read_file(st, within)
        if old is None:
            self._queue(Upsert(st, parsed))
            res.added += 1
        elif parsed.content_hash == old.content_hash and parsed.error == old.error:
            res.unchanged += 1
            if st.signature != old.signature:
                self._queue(Touch(st))
        else:
            self._queue(Upsert(st, parsed))
            res.updated += 1

    def _queue(self, change: Change) -> None:
        self._pending.append(change)
        if len(self._pending) >= BATCH_SIZE:
            self._flush()

    def _flush(self) -> None:
        if self._pending:
            self._result.rows_written += self.store.apply(self._pending)
            self._pending = []

    def _finish(self, started: float) -> SyncResult:
        self._flush()
        result, self._result = self._result, SyncResult()
        result.seconds = time.perf_counter() - started
        return result


def _readable_now(st: FileStat, old: StoredStat) -> bool:
    """False when a file indexed as readable can no longer be read (a chmod keeps the stat)."""
    return old.error is not None or st.stat_error is not None or os.access(st.path, os.R_OK)
