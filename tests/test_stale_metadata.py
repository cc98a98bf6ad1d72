"""Index rows follow the file as it is now: permissions changed later, writes in flight."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import run_unprivileged

from memoryd.indexer import sync
from memoryd.indexer.records import FileStat
from memoryd.indexer.scanner import stat_path
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.select.selector import Selector
from memoryd.select.wiring import select_unrecorded

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another uid")


def _select_as_nobody(world: Path, memdir: Path) -> list[str]:
    """Bring the index up to date and ``select`` as an unprivileged user; the picked names.

    In-process, as the daemon's reconcile and a request would: a daemon of that
    user would need an interpreter it may not be allowed to run here.
    """

    def run(db: Path = world / "index.db") -> list[str]:
        store = IndexStore(db)
        try:
            Syncer(store).sync_tree(str(memdir))
            params = {"query": "deploy runbook steps", "dir": str(memdir), "ranker": "local"}
            result = select_unrecorded(Selector(), store.conn, params)
        finally:
            store.close()
        return [s["filename"] for s in result["selected"]]

    run(world / "warm-up.db")  # as root first: every module it needs is loaded before the fork
    result: list[str] = run_unprivileged(run)
    return result


@needs_root
def test_a_file_locked_after_indexing_is_no_longer_selected(world_tmp: Path) -> None:
    memdir = world_tmp / "memory"
    memdir.mkdir()
    memdir.chmod(0o777)
    path = memdir / "reference_deploy_runbook.md"
    path.write_text("---\ndescription: deploy runbook steps for production\n---\nsteps\n")
    path.chmod(0o644)
    assert _select_as_nobody(world_tmp, memdir) == ["reference_deploy_runbook.md"]
    path.chmod(0o000)  # mtime, size and inode stay the same
    assert _select_as_nobody(world_tmp, memdir) == []


def test_a_file_growing_during_its_read_is_stored_with_the_stat_of_what_was_read(
    store: IndexStore, memdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = memdir / "feedback_in_flight.md"
    path.write_text("---\ndescription: half written\n---\nfirst part\n")

    grown: list[str] = []

    def stat_then_write(where: str, boundary: str | None = None) -> FileStat | None:
        seen = stat_path(where, boundary)
        if not grown:  # the writer finishes after the first stat, before the read
            grown.append(where)
            with path.open("a") as fh:
                fh.write("second part, written after the stat\n" * 20)
        return seen

    monkeypatch.setattr(sync, "stat_path", stat_then_write)
    assert Syncer(store).sync_path(str(path)).added == 1
    monkeypatch.undo()
    row = store.conn.execute("SELECT size, body FROM files WHERE path = ?", (str(path),)).fetchone()
    assert row["size"] == path.stat().st_size
    assert row["body"].endswith("written after the stat\n")
    # The row now matches the disk: the next pass reads nothing.
    assert Syncer(store).sync_tree(str(memdir)).unchanged == 1
