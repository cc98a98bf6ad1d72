"""One save at a time per memory folder, across threads and processes: an flock'd lock file.

A save reads the session file, merges the new save into it, writes a temp
file and renames it over. Two saves doing that at once each merge into the
file the other is about to replace, and the first rename's entries are lost.
:func:`acquire` serialises them: an in-process lock per folder (striped),
then ``flock(LOCK_EX)`` on ``.memoryd-save.lock`` in the folder itself, so
the daemon's request threads and another daemon (another state directory,
another environment) all agree.

The lock file is opened without following a symbolic link and must be a
regular file; it is never removed (a holder may be using it), and a lock
whose file was replaced between open and lock is taken again on the new
one. It is created readable and writable by whoever may write the folder
(its owner; its group or others only when the folder lets them write), so
a user who can only read the folder cannot hold it. A lock not had within
``wait_s`` is ``busy`` (nothing was written); a lock file that is not a
regular file is ``not_a_file``; a lock that cannot be made (read-only
folder, full disk) raises the ``OSError`` for the caller to name.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import threading
import time
from types import TracebackType

from memoryd.errors import Busy, NotRegularFile

LOCK_NAME = ".memoryd-save.lock"
WAIT_S = 20.0
"""How long a save waits for another save of the same folder before answering ``busy``."""

_STRIPES = 64
_THREAD_LOCKS = tuple(threading.Lock() for _ in range(_STRIPES))
_POLL_S = (0.001, 0.05)
"""First and longest pause between two tries of a lock another process holds."""


class Held:
    """A save lock held until the ``with`` block it opens ends."""

    def __init__(self, fd: int, local: threading.Lock) -> None:
        self._fd, self._local = fd, local

    def __enter__(self) -> Held:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            os.close(self._fd)  # releases the flock
        finally:
            self._local.release()


def lock_path(directory: str) -> str:
    return os.path.join(directory, LOCK_NAME)


def acquire(directory: str, *, wait_s: float | None = None) -> Held:
    """``directory``'s save lock, held; ``busy`` when not had within ``wait_s`` (``WAIT_S``)."""
    wait_s = WAIT_S if wait_s is None else wait_s
    deadline = time.monotonic() + wait_s
    path = lock_path(directory)
    local = _THREAD_LOCKS[hash(directory) % _STRIPES]
    if not local.acquire(timeout=wait_s):
        raise _busy(path, wait_s)
    try:
        return Held(_locked(path, deadline, wait_s), local)
    except BaseException:
        local.release()
        raise


def _locked(path: str, deadline: float, wait_s: float) -> int:
    """An open descriptor of the lock file at ``path`` that holds its exclusive flock."""
    while True:
        fd = _open(path)
        try:
            _flock(fd, path, deadline, wait_s)
            if _same_file(fd, path):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # replaced or removed while we waited: lock the file there now
        if time.monotonic() > deadline:
            raise _busy(path, wait_s)


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
        wanted = _mode_for(os.path.dirname(path))
        if info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) != wanted:
            os.fchmod(fd, wanted)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _mode_for(directory: str) -> int:
    """Read-write for the owner, and for group or others only where they may write the folder."""
    folder = os.stat(directory).st_mode
    return (
        stat.S_IRUSR
        | stat.S_IWUSR
        | (stat.S_IRGRP | stat.S_IWGRP if folder & stat.S_IWGRP else 0)
        | (stat.S_IROTH | stat.S_IWOTH if folder & stat.S_IWOTH else 0)
    )


def _flock(fd: int, path: str, deadline: float, wait_s: float) -> None:
    pause = _POLL_S[0]
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _busy(path, wait_s) from None
            time.sleep(min(pause, left))
            pause = min(pause * 2, _POLL_S[1])


def _same_file(fd: int, path: str) -> bool:
    try:
        on_disk = os.lstat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (on_disk.st_dev, on_disk.st_ino) == (mine.st_dev, mine.st_ino)


def _busy(path: str, wait_s: float) -> Busy:
    return Busy(
        f"another save into {os.path.dirname(path)} held its lock ({path}) for {wait_s:g} s; "
        "nothing was written: retry in a moment",
        {"path": path, "retry_after_s": 1},
    )


def _not_a_file(path: str, what: str) -> NotRegularFile:
    return NotRegularFile(
        f"cannot save: the save lock {path} is {what}; memoryd leaves it alone "
        "(remove it and save again); nothing was written",
        {"path": path, "found": what},
    )
