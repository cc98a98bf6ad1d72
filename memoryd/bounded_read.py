"""Reading a file that a user or an agent can place: bounded, never blocking, links on request.

Failures are ``OSError`` subclasses (:class:`NotAFile`, :class:`OutsideFolder`) naming what
was found. Standard library only.
"""

from __future__ import annotations

import errno
import os
import stat

MAX_READ_BYTES = 1024 * 1024
"""The cap for every read of a file someone else can place (the indexer's too)."""

_KINDS = (
    (stat.S_ISDIR, "a directory", errno.EISDIR),
    (stat.S_ISFIFO, "a FIFO (named pipe)", errno.EINVAL),
    (stat.S_ISCHR, "a character device", errno.EINVAL),
    (stat.S_ISBLK, "a block device", errno.EINVAL),
    (stat.S_ISSOCK, "a socket", errno.EINVAL),
)


class OutsideFolder(OSError):
    """The file opened lies outside the folder it was read for (a directory link on the way)."""

    def __init__(self, path: str, opened: str) -> None:
        super().__init__(errno.EXDEV, f"opened {opened!r}, outside the folder", path)
        self.opened = opened


class NotAFile(OSError):
    """The path holds something other than a regular file (or a link where none may be)."""

    def __init__(self, code: int, what: str, path: str) -> None:
        super().__init__(code, f"{what}, not a regular file", path)
        self.what = what


def open_regular(path: str, *, follow: bool = True, within: str | None = None) -> int:
    """A descriptor of the regular file at ``path`` (:class:`NotAFile` for anything else,
    without blocking); :class:`OutsideFolder` when what was opened is not inside ``within``."""
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow and os.path.islink(path):
            raise NotAFile(errno.ELOOP, "a symbolic link", path) from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kinds = ((w, c) for test, w, c in _KINDS if test(mode))
            what, code = next(kinds, ("not a regular file", errno.EINVAL))
            raise NotAFile(code, what, path)
        if within is not None:
            _check_within(fd, path, within)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_memory(path: str, within: str | None) -> int:
    """A memory file's descriptor: a link is followed only to a file inside ``within``
    (not at all without it, or without ``/proc`` to name the descriptor)."""
    inside = within if _PROC_FD else None
    return open_regular(path, follow=inside is not None, within=inside)


def readable(path: str, within: str | None) -> bool:
    """Whether the memory file at ``path`` could be read now (:func:`open_memory`)."""
    try:
        os.close(open_memory(path, within))
    except OSError:
        return False
    return True


def _check_within(fd: int, path: str, within: str) -> None:
    """Raise :class:`OutsideFolder` unless the open file's real path is inside ``within``'s
    real path (a descriptor the kernel cannot name is refused too)."""
    try:
        opened = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        opened = "(a descriptor /proc cannot name)"
    within = os.path.realpath(within)
    if opened != within and not opened.startswith(within.rstrip("/") + "/"):
        raise OutsideFolder(path, opened)


def read_capped(
    path: str, *, limit: int = MAX_READ_BYTES, follow: bool = True, within: str | None = None
) -> tuple[bytes, bool]:
    """``(the first limit bytes, whether the file holds more)``; raises OSError / NotAFile."""
    fd = open_regular(path, follow=follow, within=within)
    try:
        return read_fd(fd, limit)
    finally:
        os.close(fd)


def read_fd(fd: int, limit: int) -> tuple[bytes, bool]:
    """Up to ``limit`` bytes from ``fd`` and whether more followed. The first read asks for
    what ``fstat`` says is left, not the cap: ``os.read`` allocates what it is asked for."""
    size = os.fstat(fd).st_size - os.lseek(fd, 0, os.SEEK_CUR)  # fd: a regular file's
    chunks: list[bytes] = []
    left = limit + 1
    want = min(left, max(size, 0) + 1)
    while left > 0:
        chunk = os.read(fd, want)
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
        want = min(left, _CHUNK)  # it grew since the fstat: go on in bounded steps
    data = b"".join(chunks) if len(chunks) != 1 else chunks[0]
    return data[:limit], len(data) > limit


_CHUNK = 64 * 1024
_PROC_FD = os.path.isdir("/proc/self/fd")
