"""The writer thread at shutdown: writes nothing else would redo survive ``close``."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from memoryd.daemon.writer import Writer
from memoryd.indexer.store import IndexStore


def test_close_runs_kept_jobs_and_cancels_the_rest(db_file: Path) -> None:
    writer = Writer(IndexStore(db_file))
    started, release = threading.Event(), threading.Event()

    def busy(_store: IndexStore) -> None:
        started.set()
        release.wait(10)

    writer.submit(busy)
    assert started.wait(10)
    kept = writer.submit(lambda s: s.save_root("/srv/mem", "request", 1.0), keep=True)
    dropped = writer.submit(lambda s: s.save_root("/srv/other", "request", 1.0))
    closing = threading.Thread(target=writer.close)
    closing.start()
    for _ in range(1000):  # close drains the queue while the busy job still runs
        if dropped.cancelled():
            break
        time.sleep(0.01)
    release.set()
    closing.join(10)

    assert dropped.cancelled()
    assert kept.done() and not kept.cancelled()
    reopened = IndexStore(db_file)
    try:
        assert reopened.roots() == ["/srv/mem"]
    finally:
        reopened.close()
