"""The polling fallback when inotify runs out.

Run alone, after the rest of the suite (``make test``): it exhausts the user's
inotify instances for a moment, and no other daemon may start meanwhile.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from daemon_fixtures import DaemonProc, wait_until, write_memory


@contextmanager
def inotify_exhausted() -> Iterator[int]:
    """Use up this user's inotify instances, as a busy desktop session can.

    Other processes of the same user (parallel test runs) free instances now
    and then; a thread takes each one back at once, so the daemon finds none.
    """
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    fds: list[int] = []
    done = threading.Event()

    def grab() -> None:
        while len(fds) < 4096:
            fd = libc.inotify_init1(os.O_CLOEXEC)
            if fd < 0:
                break
            fds.append(fd)

    def keep_grabbing() -> None:
        while not done.wait(0.002):
            grab()

    grab()
    keeper = threading.Thread(target=keep_grabbing, daemon=True)
    keeper.start()
    try:
        yield len(fds)
    finally:
        done.set()
        keeper.join()
        for fd in fds:
            os.close(fd)


def test_inotify_limit_falls_back_to_polling(make_daemon: Callable[..., DaemonProc]) -> None:
    limit = int(Path("/proc/sys/fs/inotify/max_user_instances").read_text())
    if limit > 4096:
        pytest.skip(f"max_user_instances is {limit}; too many to exhaust in a test")
    d = make_daemon(start=False)
    root = d.roots[0]
    with inotify_exhausted():
        d.start()
    status = d.call("status")
    assert status["roots"][0]["watcher"] == "polling"
    assert '"watcher.polling_fallback"' in d.log()
    target = write_memory(root / "feedback_polled.md", "seen by the polling observer")
    wait_until(
        lambda: [f["path"] for f in d.call("list", {"dir": str(root)})["files"]] == [str(target)],
        timeout=10,
        what="a polled change",
    )
