"""Claiming the daemon's place (private directories, pidfile lock, socket) and systemd's share.

In watchman's order: the directory checked, the pidfile locked (a second daemon
stops here, naming the first one's pid, unless that one answers on no socket:
:func:`claim`), a socket removed only if nothing answers on it, then bound.
``$NOTIFY_SOCKET`` takes ``KEY=VALUE`` datagrams; ``$LISTEN_FDS`` hands over
sockets from fd 3 when ``$LISTEN_PID`` is ours.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import signal
import socket
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import structlog

from memoryd import paths
from memoryd.errors import AlreadyRunning, DaemonError, UnsafeRuntimeDir

log = structlog.get_logger("memoryd.daemon")

TAKEOVER_WAIT_S = 5.0  # a new serve waits this long for an unreachable daemon to bind again
STOP_WAIT_S = 20.0  # and then this long for it to stop

Loose = Literal["refuse", "tighten", "keep"]


def ensure_private_dir(path: Path, *, loose: Loose = "refuse") -> None:
    """Create ``path`` and its parents 0700, or check an existing one is ours, unwritable by others.

    ``lstat``: a symlink is refused even when its target is ours (whoever owns the
    link's entry could re-point it). ``loose`` says what becomes of one of ours that
    others may read: refused, set to 0700, or (a directory the user named) left as it is.
    """
    try:
        paths.make_private_dirs(path)
        st = path.lstat()
    except OSError as exc:
        raise DaemonError(f"cannot create runtime directory {path}: {exc.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeRuntimeDir(
            f"refusing to use {path}: it is a symbolic link (to {os.readlink(path)!r});"
            " remove it and let memoryd create the directory"
        )
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeRuntimeDir(f"refusing to use {path}: it exists and is not a directory")
    if st.st_uid != os.getuid():
        raise UnsafeRuntimeDir(
            f"refusing to use {path}: it belongs to uid {st.st_uid}, not to us ({os.getuid()});"
            " use a directory of your own"
        )
    mode = stat.S_IMODE(st.st_mode)
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UnsafeRuntimeDir(
            f"refusing to use {path}: it is writable by others (mode {mode:o});"
            f" run `chmod 700 {path}`"
        )
    if mode & 0o077 and loose == "tighten":
        os.chmod(path, 0o700)
    elif mode & 0o077 and loose == "refuse":
        raise UnsafeRuntimeDir(
            f"refusing to use {path}: it is open to others (mode {mode:o}, expected 700);"
            f" run `chmod 700 {path}`"
        )


def ensure_state_dir(path: Path) -> None:
    """The state directory: memoryd's own (the default, or below it) is set to 0700 if others
    may read it; one the user chose elsewhere is never changed, only refused if unsafe."""
    own = path.absolute().is_relative_to(paths.state_dir().absolute())
    ensure_private_dir(path, loose="tighten" if own else "keep")


class PidFile:
    """An flock'ed pidfile: held for the daemon's life, released by the kernel on death."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            other = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise AlreadyRunning(
                    f"memoryd is already running (pid {other}; pidfile {self.path})"
                ) from None
            raise DaemonError(f"cannot lock pidfile {self.path}: {exc.strerror}") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def holder(self) -> int | None:
        """The pid another daemon wrote in the file, if it is one."""
        try:
            first = self.path.read_text(errors="replace").strip()
        except OSError:
            return None
        return int(first) if first.isdigit() else None

    def release(self) -> None:
        """Remove the file (if it is still ours) and drop the lock; idempotent."""
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            if os.fstat(self._fd).st_ino == os.stat(self.path).st_ino:
                self.path.unlink()
        os.close(self._fd)
        self._fd = None


def claim(pidfile: PidFile, socket_path: Path) -> None:
    """Lock ``pidfile``; a holder that answers on no socket is sent SIGHUP (it binds again),
    and if it still answers nowhere after :data:`TAKEOVER_WAIT_S`, SIGTERM, and its place
    taken. Only a ``memoryd serve`` of this user is ever signalled."""
    try:
        pidfile.acquire()
        return
    except AlreadyRunning as exc:
        refused = exc
    pid = pidfile.holder()
    if pid is None or not is_memoryd_daemon(pid):
        raise refused

    def reachable() -> Path | None:
        # Where it listens (it may have been given another --socket), else where we would.
        return next((p for p in listening_paths(pid) or [socket_path] if socket_answers(p)), None)

    if reachable() is not None:
        raise refused
    os.kill(pid, signal.SIGHUP)
    if _within(TAKEOVER_WAIT_S, lambda: reachable() is not None):
        raise AlreadyRunning(
            f"memoryd is already running (pid {pid}) and answers on {reachable()}"
            " (it re-created its socket file)"
        )
    log.warning("daemon.taking_over", pid=pid, socket=str(socket_path))
    os.kill(pid, signal.SIGTERM)
    if not _within(STOP_WAIT_S, lambda: _acquired(pidfile)):
        raise AlreadyRunning(
            f"memoryd pid {pid} holds {pidfile.path}, answers on no socket and did not stop"
            f" within {STOP_WAIT_S:.0f} s of SIGTERM; stop it (kill {pid}) and start again"
        )
    log.warning("daemon.took_over", pid=pid)


def is_memoryd_daemon(pid: int) -> bool:
    """Whether ``pid`` is a ``memoryd serve`` of this user (Linux's /proc; False elsewhere)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    uid = next((line.split()[1] for line in status.splitlines() if line.startswith("Uid:")), "")
    named = any(b"memoryd" in arg for arg in argv[:3])
    return uid == str(os.getuid()) and named and b"serve" in argv


def listening_paths(pid: int) -> list[Path]:
    """The paths the process ``pid`` listens on, deleted or not (Linux's /proc; else none)."""
    links = []
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):  # closed meanwhile
                links.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        table = Path("/proc/net/unix").read_text().splitlines()[1:]
    except OSError:
        return []
    inodes = {link[8:-1] for link in links if link.startswith("socket:[")}
    # Num RefCount Protocol Flags Type St Inode Path; flag 0x10000: listening.
    rows = [line.split() for line in table]
    return [Path(r[7]) for r in rows if len(r) >= 8 and r[6] in inodes and int(r[3], 16) & 0x10000]


def _acquired(pidfile: PidFile) -> bool:
    try:
        pidfile.acquire()
    except AlreadyRunning:
        return False
    return True


def _within(seconds: float, done: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


def socket_is(path: Path, inode: int) -> bool:
    """Whether ``path`` still is the socket file of that inode (not deleted, not replaced)."""
    try:
        st = path.lstat()
    except OSError:
        return False
    return stat.S_ISSOCK(st.st_mode) and st.st_ino == inode


def socket_answers(path: Path, timeout: float = 1.0) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(timeout)
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


def bind_socket(path: Path) -> tuple[socket.socket, int]:
    """A 0600 listening socket at ``path`` in a private folder (a dead daemon's leftover
    removed), and the inode of the file it made: shutdown removes exactly that file, never a
    successor's."""
    ensure_private_dir(path.parent)
    if path.exists() or path.is_symlink():
        if socket_answers(path):
            raise AlreadyRunning(f"another memoryd already answers on {path}")
        if not stat.S_ISSOCK(path.lstat().st_mode):
            raise DaemonError(f"refusing to replace {path}: it exists and is not a socket")
        path.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    old_umask = os.umask(0o177)  # the socket file is created 0600, with no window
    try:
        sock.bind(str(path))
    except OSError as exc:
        sock.close()
        raise DaemonError(f"cannot bind {path}: {exc.strerror}") from None
    finally:
        os.umask(old_umask)
    sock.listen(128)
    return sock, path.stat().st_ino


def remove_socket(path: Path, inode: int) -> None:
    """Unlink ``path`` only if it is still the socket file this daemon created."""
    with contextlib.suppress(OSError):
        if path.lstat().st_ino == inode:
            path.unlink()


def notify(*lines: str) -> bool:
    """Send ``lines`` (e.g. ``READY=1``) to the service manager; False when not under systemd."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]  # abstract namespace
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.sendto("\n".join(lines).encode(), address)
    except OSError:
        return False
    return True


def watchdog_interval() -> float | None:
    """Seconds between ``WATCHDOG=1`` pings (half of WatchdogSec), or None when not asked."""
    usec = os.environ.get("WATCHDOG_USEC")
    pid = os.environ.get("WATCHDOG_PID")
    if not usec or (pid and pid != str(os.getpid())):
        return None
    try:
        return int(usec) / 2_000_000
    except ValueError:
        return None


def listen_fds() -> list[socket.socket]:
    """Sockets passed by socket activation (empty when not activated); the variables unset."""
    pid = os.environ.get("LISTEN_PID")
    count = os.environ.get("LISTEN_FDS")
    for key in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"):
        os.environ.pop(key, None)
    if not count or pid != str(os.getpid()):
        return []
    sockets = []
    for fd in range(3, 3 + int(count)):  # SD_LISTEN_FDS_START
        os.set_inheritable(fd, False)
        sockets.append(socket.socket(fileno=fd))
    return sockets
