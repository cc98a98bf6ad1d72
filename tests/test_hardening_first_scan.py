"""Requests that name a new folder at once all read it scanned, not only the one that added it.

The first request for a memory folder outside the roots makes it a root and
waits for its scan; a request for the same folder arriving meanwhile finds
the root known and must wait for that scan too, instead of reading a half
indexed folder. A real daemon, several connections at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from daemon_fixtures import DaemonProc, write_memory

FILES = 400


def test_concurrent_first_requests_for_a_folder_all_see_every_file(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    daemon = make_daemon()
    folder = tmp_path / "new" / "memory"
    for i in range(FILES):
        write_memory(folder / f"feedback_note_{i}.md", f"note number {i} about the ledger")
    counts: list[int] = []

    def listing() -> None:
        counts.append(len(daemon.call("list", {"dir": str(folder)})["files"]))

    threads = [threading.Thread(target=listing) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert counts == [FILES] * 6
