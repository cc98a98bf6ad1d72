"""A command held by a daemon that is still building its first index says so on stderr.

The daemon answers only ``status`` before its first index is complete; the
rest wait for it, which on a large folder is many seconds with nothing on
the screen. :func:`told_while_starting` wraps a request: once it has waited
:data:`NOTE_AFTER_S`, a second connection asks ``status``, and if the daemon
is ``starting`` one line on stderr says what the command waits for. A fast
answer costs a timer, and nothing is printed.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memoryd.cli.common import note
from memoryd.errors import MemorydError
from memoryd.ipc.client import Client

NOTE_AFTER_S = 1.0
"""How long a request waits before the daemon is asked whether it is still starting."""


@contextmanager
def told_while_starting(client: Client) -> Iterator[Client]:
    """``client``, whose requests in this block print a line if held by a starting daemon."""
    timer = threading.Timer(NOTE_AFTER_S, say_if_starting, (client.socket_path,))
    timer.daemon = True
    timer.start()
    try:
        yield client
    finally:
        timer.cancel()
        timer.join()  # a probe under way finishes its line before the command goes on


def say_if_starting(socket: Path) -> None:
    """One line on stderr when the daemon on ``socket`` has not finished its first index."""
    try:
        with Client(socket, timeout=2) as probe:
            status = probe.status()
    except MemorydError:
        return
    if status.get("state") != "starting":
        return
    progress = status.get("indexing")
    done = (
        f" ({progress['done']:,} of {progress['total']:,} files so far)"
        if progress and progress.get("phase") == "indexing"
        else ""
    )
    note(f"waiting for the daemon to finish its first index{done}; this answers after it")
