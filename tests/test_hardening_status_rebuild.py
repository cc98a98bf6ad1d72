"""``status`` answers while the index file is lost and the writer has not yet started over.

The writer notices a deleted or replaced ``index.db`` before its next job (or
within a second when idle); until then a request thread that opens the path
meets the other file. ``status`` says so in its ``index`` entry instead of
failing, and whether a failed read means a rebuild is decided by the writer's
state and store, not by the text of SQLite's message.
"""

from __future__ import annotations

import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from daemon_fixtures import composed, wait_until, write_memory

from memoryd.config import Config
from memoryd.daemon import health
from memoryd.indexer.store import IndexStore


def _cfg(tmp_path: Path, root: Path) -> Config:
    return Config(
        socket=tmp_path / "s.sock",
        state_dir=tmp_path / "state",
        db=tmp_path / "index.db",
        roots=(str(root),),
    )


def test_status_answers_while_the_writer_has_not_noticed_the_index_was_replaced(
    tmp_path: Path,
) -> None:
    root = tmp_path / "memory"
    write_memory(root / "feedback_lint.md", "always run the linter before committing")
    cfg = _cfg(tmp_path, root)
    with composed(cfg) as parts, ThreadPoolExecutor(1) as pool:
        parts.roots.restore([(str(root), "configured")])
        parts.maintenance.reconcile("startup")
        busy, release = threading.Event(), threading.Event()

        def hold(store: IndexStore) -> None:  # the writer looks at its file between jobs
            busy.set()
            release.wait(30)

        parts.writer.submit(hold)
        assert busy.wait(10)
        for suffix in ("", "-wal", "-shm"):  # its WAL would still hold the old pages
            Path(f"{cfg.db_path}{suffix}").unlink()
        cfg.db_path.write_bytes(b"not a database " * 300)

        def status() -> dict[str, Any]:  # a request thread of its own: it opens the path
            reply: dict[str, Any] = pool.submit(parts.handlers["status"], {}).result()
            return reply

        try:
            reply = status()
        finally:
            release.set()
        assert reply["index"]["state"] == "rebuilding"
        assert "replaced" in reply["index"]["reason"]
        assert [r["path"] for r in reply["roots"]] == [str(root)]

        def rebuilt() -> bool:
            again = status()
            return bool(again["index"]["state"] == "ok" and again["roots"][0]["files"] == 1)

        wait_until(rebuilt, 15, "the writer to rebuild the index from the files")


def test_a_missing_table_is_a_rebuild_only_when_the_writer_replaced_the_store(
    tmp_path: Path,
) -> None:
    root = tmp_path / "memory"
    root.mkdir()
    cfg = _cfg(tmp_path, root)
    missing = sqlite3.OperationalError("no such table: files")
    with composed(cfg) as parts:
        writer, old = parts.writer, parts.writer.store
        assert health.trouble(missing, old, writer) is None  # a defect, not the index's state
        cfg.db_path.unlink()
        wait_until(lambda: writer.store is not old, 15, "the writer to start over")
        found = health.trouble(missing, old, writer)
        assert found is not None and found[1]
