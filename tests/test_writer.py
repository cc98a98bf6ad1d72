"""The writer thread at shutdown: writes nothing else would redo survive ``close``."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from memoryd.daemon import writer as writer_mod
from memoryd.daemon.writer import Writer
from memoryd.indexer.store import IndexStore, open_reader


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
        assert [r[0] for r in reopened.root_rows()] == ["/srv/mem"]
    finally:
        reopened.close()


def test_a_grown_wal_is_started_over_while_readers_keep_reading(
    db_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer_mod, "WAL_RESTART_BYTES", 256 * 1024)
    writer = Writer(IndexStore(db_file))
    stop = threading.Event()
    seen: list[int] = []

    def read_all_the_time() -> None:
        conn = open_reader(db_file)
        while not stop.is_set():
            seen.append(conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0])
        conn.close()

    def grow(store: IndexStore) -> None:
        with store.transaction() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS ballast(b BLOB)")
            conn.execute("INSERT INTO ballast VALUES (randomblob(1000000))")

    reader = threading.Thread(target=read_all_the_time)
    reader.start()
    try:
        for _ in range(3):
            writer.call(grow)
            writer.call(lambda _store: None)  # the check after ``grow`` has run by now
            wal = Path(f"{db_file}-wal")
            assert wal.stat().st_size < 256 * 1024  # a 1 MB write was folded back
    finally:
        stop.set()
        reader.join(10)
        writer.close()
    assert seen
    check = open_reader(db_file)
    try:
        assert check.execute("SELECT count(*) FROM ballast").fetchone()[0] == 3
    finally:
        check.close()
