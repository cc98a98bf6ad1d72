"""How memoryd writes into folders: atomic replaces, one save at a time per folder.

:func:`write_atomic`: temp file, fsync, rename, fsync of the folder. :func:`acquire`: an
in-process lock per folder, then ``flock`` on ``.memoryd-save.lock`` in it (never followed if a
symbolic link, never removed, group- or world-writable only as the folder is).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import stat
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator

from memoryd.errors import Busy, NotRegularFile, Unwritable
from memoryd.indexer.store import process_alive

LOCK_NAME = ".memoryd-save.lock"
WAIT_S = 20.0
"""How long a save waits for another save of the same folder before answering ``busy``."""
TEMP_SUFFIX = ".tmp"

_STRIPES = 64
_THREAD_LOCKS = tuple(threading.Lock() for _ in range(_STRIPES))
_POLL_S = (0.001, 0.05)
"""First and longest pause between two tries of a lock another process holds."""
_TEMP_NAME = re.compile(r"^\..+\.(md|json)\.(?:(\d+)\.)?[a-z0-9_]{8}\.tmp$")
_UNNAMED_TEMP_AGE_S = 60.0
"""Temp files without a pid in their name are removed only once this old."""


def write_atomic(path: str, text: str, mode: int = 0o644) -> None:
    """Replace ``path`` with ``text`` in one rename; the file gets ``mode`` exactly."""
    directory = os.path.dirname(path)
    prefix = f".{os.path.basename(path)}.{os.getpid()}."
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=TEMP_SUFFIX, dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def is_temp_name(name: str) -> bool:
    """True for a name :func:`write_atomic` gives its temp files."""
    return _TEMP_NAME.match(name) is not None


def remove_stale_temps(paths: Iterable[str]) -> int:
    """Delete the :func:`write_atomic` temp files among ``paths`` whose writer is gone."""
    removed = 0
    now = time.time()
    for path in paths:
        match = _TEMP_NAME.match(os.path.basename(path))
        if match is None or not _writer_gone(match.group(2), path, now):
            continue
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
            removed += 1
    return removed


def _writer_gone(pid: str | None, path: str, now: float) -> bool:
    if pid is not None:
        return int(pid) != os.getpid() and not process_alive(int(pid))
    try:
        return now - os.lstat(path).st_mtime > _UNNAMED_TEMP_AGE_S
    except OSError:
        return False


def unwritable(path: str, exc: OSError, *, doing: str = "write") -> Unwritable:
    """The ``unwritable`` error for a failed write: the cause by name (``ENOSPC``) and in words."""
    name = errno.errorcode.get(exc.errno or 0, "error")
    return Unwritable(
        f"cannot {doing} {path}: {exc.strerror or exc} ({name}); nothing was written",
        {"path": path, "errno": name},
    )


@contextlib.contextmanager
def acquire(directory: str) -> Iterator[None]:
    """``directory``'s save lock, held for the ``with`` block; ``busy`` when not had within
    ``WAIT_S``, ``unwritable`` when it cannot be made, ``not_a_file`` when it is no file."""
    deadline = time.monotonic() + WAIT_S
    path = os.path.join(directory, LOCK_NAME)
    local = _THREAD_LOCKS[hash(directory) % _STRIPES]
    if not local.acquire(timeout=WAIT_S):
        raise _busy(path)
    try:
        try:
            fd = _locked(path, deadline)
        except OSError as exc:
            raise unwritable(path, exc, doing="lock") from None
        try:
            yield
        finally:
            os.close(fd)  # releases the flock
    finally:
        local.release()


def _locked(path: str, deadline: float) -> int:
    """An open descriptor of the lock file at ``path`` holding its exclusive flock."""
    while True:
        fd = _open(path)
        try:
            _flock(fd, path, deadline)
            if _same_file(fd, path):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # replaced or removed while we waited: lock the file there now
        if time.monotonic() > deadline:
            raise _busy(path)


def _open(path: str) -> int:
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _not_a_file(path, "a symbolic link") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _not_a_file(path, "not a regular file")
        folder = os.stat(os.path.dirname(path)).st_mode
        wanted = (
            stat.S_IRUSR
            | stat.S_IWUSR
            | (stat.S_IRGRP | stat.S_IWGRP if folder & stat.S_IWGRP else 0)
            | (stat.S_IROTH | stat.S_IWOTH if folder & stat.S_IWOTH else 0)
        )
        if info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) != wanted:
            os.fchmod(fd, wanted)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _flock(fd: int, path: str, deadline: float) -> None:
    pause = _POLL_S[0]
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _busy(path) from None
            time.sleep(min(pause, left))
            pause = min(pause * 2, _POLL_S[1])


def _same_file(fd: int, path: str) -> bool:
    try:
        on_disk = os.lstat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (on_disk.st_dev, on_disk.st_ino) == (mine.st_dev, mine.st_ino)


def _busy(path: str) -> Busy:
    return Busy(
        f"another save into {os.path.dirname(path)} held its lock ({path}) for {WAIT_S:g} s; "
        "nothing was written: retry in a moment",
        {"path": path, "retry_after_s": 1},
    )


def _not_a_file(path: str, what: str) -> NotRegularFile:
    return NotRegularFile(
        f"cannot save: the save lock {path} is {what}; memoryd leaves it alone "
        "(remove it and save again); nothing was written",
        {"path": path, "found": what},
    )
