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
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from itertools import islice
from multiprocessing import forkserver
from multiprocessing.context import BaseContext

from memoryd.indexer.parse import classify, parse_file
from memoryd.indexer.records import ERROR_READ, FileStat, ParsedFile
from memoryd.indexer.rows import Row, TermAnalysis, file_row, memory_terms
from memoryd.indexer.scanner import stat_path

PARALLEL_MIN_FILES = 2000
"""Below this many files, starting worker processes costs more than it saves."""
MAX_WORKERS = 4
_CHUNK = 250

Analysed = tuple[FileStat, ParsedFile, bytes | None]
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


def read_and_analyse(st: FileStat, analysis: TermAnalysis) -> Analysed:
    st, parsed = read_file(st)
    return st, parsed, memory_terms(st.filename, parsed, analysis)


def _chunk(stats: Sequence[FileStat], now: float, analysis: TermAnalysis) -> list[Row]:
    return [file_row(*read_and_analyse(st, analysis), now) for st in stats]


def workers_for(count: int) -> int:
    """How many processes a first index of ``count`` files should use (1: in-process)."""
    if count < PARALLEL_MIN_FILES:
        return 1
    return max(1, min(MAX_WORKERS, len(os.sched_getaffinity(0))))


def start_workers() -> None:
    """Start the fork server now, for a first index that will need workers.

    The walk calls this once it has found enough files: the server's imports
    (~0.1 s) then overlap the rest of the walk instead of following it.
    """
    if workers_for(PARALLEL_MIN_FILES) > 1:
        _context()
        forkserver.ensure_running()  # returns at once; the server imports in parallel


def _context() -> BaseContext:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([__name__])
    return ctx


def rows_for(stats: Sequence[FileStat], now: float, analysis: TermAnalysis) -> Iterator[Row]:
    """The finished ``files`` row of every stat, in order, on as many cores as it pays to use.

    Workers send back rows rather than parse records: a tuple of plain values
    costs far less to pickle and unpickle, and the writer has nothing left to
    build. The pool comes up on a thread of its own; until its workers are
    running, this thread does the head of the list itself instead of waiting.
    If the workers cannot be started or die, the rest is done in this process.
    """
    workers = workers_for(len(stats))
    done = 0
    try:
        if workers > 1:
            ctx = _context()  # the preload is set before the server can start
            forkserver.ensure_running()
            with _StartingPool(ctx, workers) as pool:
                while done < len(stats) and not pool.ready.is_set():
                    yield file_row(*read_and_analyse(stats[done], analysis), now)
                    done += 1
                for row in _from_workers(pool, stats[done:], now, analysis):
                    yield row
                    done += 1
    except (BrokenProcessPool, OSError) as exc:
        _log_failure(exc, done, len(stats))
    for st in stats[done:]:
        yield file_row(*read_and_analyse(st, analysis), now)


class _StartingPool:
    """A process pool started on a thread, so the caller can read files meanwhile.

    Spawning a worker through the fork server blocks until the server has
    finished its imports; :attr:`ready` is set once every worker has run a
    first (empty) task, or the start failed.
    """

    def __init__(self, ctx: BaseContext, workers: int) -> None:
        self.ready = threading.Event()
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None
        self._error: BaseException | None = None
        threading.Thread(
            target=self._start, args=(ctx, workers), name="memoryd-pool-start", daemon=True
        ).start()

    def _start(self, ctx: BaseContext, workers: int) -> None:
        try:
            self._pool = ProcessPoolExecutor(
                max_workers=workers,
                mp_context=ctx,
                initializer=die_with,
                initargs=(os.getpid(),),
            )
            for started in [self._pool.submit(int) for _ in range(workers)]:
                started.result()
        except BaseException as exc:  # handed to the thread that uses the pool
            self._error = exc
        finally:
            self.ready.set()

    def executor(self) -> ProcessPoolExecutor:
        """The running pool (waits for the start); raises what made the start fail."""
        self.ready.wait()
        if self._error is not None:
            raise self._error
        assert self._pool is not None
        return self._pool

    def __enter__(self) -> _StartingPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.ready.wait()
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)


PARENT_CHECK_S = 0.5


def die_with(parent: int) -> None:
    """Worker initializer: exit as soon as ``parent`` (the daemon) is gone.

    A ``kill -9`` of the daemon runs no clean-up, and a worker in the middle
    of a chunk would otherwise finish it, or wait for more, with nobody left
    to read the result. The workers are children of the fork server, not of
    the daemon, so the check is on the daemon's pid itself.
    """

    def watch() -> None:
        while True:
            time.sleep(PARENT_CHECK_S)
            try:
                os.kill(parent, 0)
            except ProcessLookupError:
                os._exit(1)
            except PermissionError:  # the pid was reused by another user's process
                os._exit(1)

    threading.Thread(target=watch, name="parent-check", daemon=True).start()


def _log_failure(exc: Exception, done: int, total: int) -> None:
    # Imported here: the fork server preloads this module, and structlog would be
    # a third of its import time for a message that is almost never written.
    import structlog  # noqa: PLC0415

    log = structlog.get_logger("memoryd.indexer")
    log.warning("index.workers_failed", error=str(exc), done=done, total=total)


def _from_workers(
    pool: _StartingPool, stats: Sequence[FileStat], now: float, analysis: TermAnalysis
) -> Iterator[Row]:
    executor = pool.executor()
    chunks = (stats[i : i + _CHUNK] for i in range(0, len(stats), _CHUNK))
    # A bounded window of chunks in flight: results wait for the writer in
    # memory, and a whole tree's worth would raise the daemon's RSS.
    pending = deque(
        executor.submit(_chunk, c, now, analysis) for c in islice(chunks, 2 * pool.workers)
    )
    while pending:
        results = pending.popleft().result()
        pending.extend(executor.submit(_chunk, c, now, analysis) for c in islice(chunks, 1))
        yield from results
