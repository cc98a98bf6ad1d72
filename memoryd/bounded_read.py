"""Reading a file that a user or an agent can place: bounded, never blocking, links on request.

Whatever sits at a memory or session path is read through :func:`read_capped`:

* at most ``limit`` bytes (the indexer's 1 MiB cap by default), so a 200 MB
  session file or a link to ``/dev/zero`` costs one bounded read;
* opened ``O_NONBLOCK``, so a FIFO planted at the path cannot hang the thread
  that opens it, and checked with ``fstat`` after the open, so a FIFO, a
  directory or a device is refused by what was opened, not by an earlier stat;
* with ``follow=False``, opened ``O_NOFOLLOW`` (session files, which memoryd
  writes itself and where a link is not expected);
* with ``within`` (a real directory path), the file opened must lie inside it,
  as the kernel names the open descriptor: what was *opened* is checked, not
  an earlier stat, so a memory swapped for a link to a file elsewhere (or a
  directory swapped for a link on the way) is refused however the swap is
  timed. Memory files are read through :func:`open_memory`: through a link
  only to a file inside their root, and never through one without a root.

Failures are :class:`NotAFile` (an ``OSError``, so callers that catch
``OSError`` catch it too) with a message naming what was found. Light on
purpose: the Claude Code hook reads the memories it injects with it.
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


def kind_of(mode: int) -> str | None:
    """What a non-regular file is (``a FIFO (named pipe)``...), or None for a regular file."""
    for test, what, _code in _KINDS:
        if test(mode):
            return what
    return None if stat.S_ISREG(mode) else "not a regular file"


def open_regular(path: str, *, follow: bool = True, within: str | None = None) -> int:
    """A descriptor of the regular file at ``path``; :class:`NotAFile` for anything else.

    Never blocks: a FIFO is opened non-blocking and refused. With ``within``,
    :class:`OutsideFolder` when what was opened is not inside that real path.
    """
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow and os.path.islink(path):
            raise NotAFile(errno.ELOOP, "a symbolic link", path) from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        what = kind_of(mode)
        if what is not None:
            code = next((c for test, _w, c in _KINDS if test(mode)), errno.EINVAL)
            raise NotAFile(code, what, path)
        if within is not None:
            _check_within(fd, path, within)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_memory(path: str, within: str | None) -> int:
    """A memory file's descriptor: a link is followed only to a file inside ``within``.

    Without ``within``, or where the kernel cannot name an open descriptor (no
    ``/proc``), a link is not followed at all (``O_NOFOLLOW``).
    """
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
    """Raise :class:`OutsideFolder` unless the open file's real path is inside ``within``.

    ``within`` is compared by its real path too (a memory folder reached through a
    linked parent, as a dotfiles ``~/.claude`` is, holds its own files). A descriptor
    the kernel cannot name is refused as well.
    """
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
    """Up to ``limit`` bytes from ``fd`` and whether more followed (one extra byte is read).

    The first read asks for what ``fstat`` says is left (plus one byte), not
    for the cap: ``os.read`` allocates what it is asked for, and a 1 MiB
    buffer per few-KiB session file, on every request thread, is what glibc's
    per-thread arenas then keep (the flood bench's peak RSS doubled).
    """
    try:
        size = os.fstat(fd).st_size - os.lseek(fd, 0, os.SEEK_CUR)
    except OSError:
        size = _CHUNK
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
