"""sd_notify and socket activation without libsystemd.

``$NOTIFY_SOCKET`` takes ``KEY=VALUE`` datagrams; ``$LISTEN_FDS`` hands over
sockets from fd 3 when ``$LISTEN_PID`` is ours.
"""

from __future__ import annotations

import os
import socket

SD_LISTEN_FDS_START = 3


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
    for fd in range(SD_LISTEN_FDS_START, SD_LISTEN_FDS_START + int(count)):
        os.set_inheritable(fd, False)
        sockets.append(socket.socket(fileno=fd))
    return sockets
