"""Reading files for the index, and the first index of a tree on every core.

Every path that gets (re)indexed goes through :func:`read_and_analyse`: read,
parse, and for a usable memory the ranker's term statistics, so the writer
stores all of it in one row.

A first index of a large tree is dominated by CPU work that is independent per
file (UTF-8 decoding, header parsing, the secret scan, tokenizing), so when
there are enough files it is spread over a pool of worker processes. They are
started through a fork server that preloads only this module: the daemon has
threads, and forking it directly would copy their locks in whatever state they
were. Results come back in submission order, so the index is the same whichever
way it was built.
"""

from __future__ import annotations

import multiprocessing
import os
import stat
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from itertools import islice
from multiprocessing import forkserver
from multiprocessing.context import BaseContext

from memoryd.indexer.parse import classify, parse_file
from memoryd.indexer.records import ERROR_READ, FileStat, ParsedFile
from memoryd.indexer.rows import Row, file_row, memory_terms
from memoryd.indexer.scanner import stat_path

PARALLEL_MIN_FILES = 2000
"""Below this many files, starting worker processes costs more than it saves."""
MAX_WORKERS = 4
_CHUNK = 250
_HEAD_FILES = 1000
"""At most this many files (and a quarter of the tree) are read in this process
while the fork server starts: about the time its imports take."""

Analysed = tuple[FileStat, ParsedFile, str | None]
"""A file's stat (taken after the read), its parse, and its stored term statistics
(None unless it is a usable memory)."""

_STABLE_READS = 3
"""How many times a file that changes while being read is read again."""


def read_file(st: FileStat) -> tuple[FileStat, ParsedFile]:
    """Read and parse ``st.path``; the stat returned is one taken after the read.

    A file still being written can grow between the stat and the read; storing
    the earlier stat would keep the size seen mid-write until the next
    reconcile. So the path is stat'ed again after reading and, if it moved,
    read again, a few times at most. A path that could not be stat'ed is a
    read error.
    """
    if st.stat_error is not None:
        error = ParsedFile(
            kind=classify(st.filename), content_hash="", error=st.stat_error, error_kind=ERROR_READ
        )
        return st, error
    for _ in range(_STABLE_READS):
        parsed = parse_file(st.path, st.filename, st.size)
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


def read_and_analyse(st: FileStat) -> Analysed:
    st, parsed = read_file(st)
    return st, parsed, memory_terms(st.filename, parsed)


def _chunk(stats: Sequence[FileStat], now: float) -> list[Row]:
    return [file_row(*read_and_analyse(st), now) for st in stats]


def workers_for(count: int) -> int:
    """How many processes a first index of ``count`` files should use (1: in-process)."""
    if count < PARALLEL_MIN_FILES:
        return 1
    return max(1, min(MAX_WORKERS, len(os.sched_getaffinity(0))))


def rows_for(stats: Sequence[FileStat], now: float) -> Iterator[Row]:
    """The finished ``files`` row of every stat, in order, on as many cores as it pays to use.

    Workers send back rows rather than parse records: a tuple of plain values
    costs far less to pickle and unpickle, and the writer has nothing left to
    build. The fork server is started first and, while it imports the parser,
    this process does the head of the list itself instead of waiting. If the
    workers cannot be started or die, the rest is done in this process.
    """
    workers = workers_for(len(stats))
    done = 0
    try:
        if workers > 1:
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload([__name__])
            forkserver.ensure_running()  # returns at once; the server imports in parallel
            for st in stats[: min(len(stats) // 4, _HEAD_FILES)]:
                yield file_row(*read_and_analyse(st), now)
                done += 1
            for row in _from_workers(ctx, workers, stats[done:], now):
                yield row
                done += 1
    except (BrokenProcessPool, OSError) as exc:
        _log_failure(exc, done, len(stats))
    for st in stats[done:]:
        yield file_row(*read_and_analyse(st), now)


def _log_failure(exc: Exception, done: int, total: int) -> None:
    # Imported here: the fork server preloads this module, and structlog would be
    # a third of its import time for a message that is almost never written.
    import structlog  # noqa: PLC0415

    log = structlog.get_logger("memoryd.indexer")
    log.warning("index.workers_failed", error=str(exc), done=done, total=total)


def _from_workers(
    ctx: BaseContext, workers: int, stats: Sequence[FileStat], now: float
) -> Iterator[Row]:
    chunks = (stats[i : i + _CHUNK] for i in range(0, len(stats), _CHUNK))
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        # A bounded window of chunks in flight: results wait for the writer
        # in memory, and a whole tree's worth would raise the daemon's RSS.
        pending = deque(pool.submit(_chunk, c, now) for c in islice(chunks, 2 * workers))
        while pending:
            results = pending.popleft().result()
            pending.extend(pool.submit(_chunk, c, now) for c in islice(chunks, 1))
            yield from results
