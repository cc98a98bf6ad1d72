"""A damaged index is set aside and rebuilt from the files, by a real daemon."""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from daemon_fixtures import DaemonProc, wait_until, write_memory

from memoryd.indexer.recovery import damage, open_or_recover
from memoryd.indexer.store import IndexStore
from memoryd.sessions.writes import remove_stale_temps

FILES = 30


def truncate(db: Path) -> None:
    with db.open("r+b") as fh:
        fh.truncate(db.stat().st_size // 3)


def garbage_header(db: Path) -> None:
    with db.open("r+b") as fh:
        fh.write(random.Random(1).randbytes(100))


def garbage_pages(db: Path) -> None:
    size = db.stat().st_size
    with db.open("r+b") as fh:
        fh.seek(4096 * 2)
        fh.write(random.Random(2).randbytes(size - 4096 * 3))
    Path(f"{db}-wal").unlink(missing_ok=True)


@pytest.mark.parametrize("corrupt", [truncate, garbage_header, garbage_pages])
def test_a_damaged_index_is_moved_aside_rebuilt_and_served(
    make_daemon: Callable[..., DaemonProc], corrupt: Callable[[Path], None]
) -> None:
    d = make_daemon(start=False)
    root = d.roots[0]
    for i in range(FILES):
        write_memory(root / f"feedback_{i}.md", f"deploy note number {i} " + "words " * 80)
    d.start()
    with d.client() as c:
        c.select("deploy note", str(root), ranker="local")
        wait_until(lambda: c.call("stats")["runs"] >= 1, 10, "the telemetry row")
    assert d.stop() == 0
    corrupt(d.db)
    assert damage(d.db) is not None
    d.start()
    listing = d.call("list", {"dir": str(root)})
    assert len(listing["files"]) == FILES
    aside = sorted(d.db.parent.glob("index.db.corrupt-*"))
    assert [p.name for p in aside if not p.name.endswith(("-wal", "-shm"))]
    assert d.log().count("index.recovered_from_damage") == 1
    assert damage(d.db) is None
    assert d.call("status")["state"] == "ready"


def test_a_sound_index_is_opened_as_it_is(db_file: Path) -> None:
    IndexStore(db_file).close()
    store, recovery = open_or_recover(db_file)
    store.close()
    assert recovery is None and not list(db_file.parent.glob("*.corrupt-*"))


def test_telemetry_and_roots_are_salvaged_when_they_can_be_read(db_file: Path) -> None:
    store = IndexStore(db_file)
    store.save_root("/m/request-added", "request", 1.0)
    with store.transaction() as conn:
        conn.execute("INSERT INTO selector_runs(run_id, at, dir) VALUES ('r1', 1.0, '/m')")
    store.close()
    # Damage a file row's page only: the FTS/file pages are what a scan rebuilds.
    with sqlite3.connect(db_file) as conn:
        root_page = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'files_fts_data'"
        ).fetchone()[0]
    with db_file.open("r+b") as fh:
        fh.seek((root_page - 1) * 4096)
        fh.write(b"\xff" * 4096)
    assert damage(db_file) is not None
    store, recovery = open_or_recover(db_file)
    try:
        assert recovery is not None and recovery.salvaged == {"selector_runs": 1, "roots": 1}
        assert [r[0] for r in store.root_rows()] == ["/m/request-added"]
        assert store.conn.execute("SELECT run_id FROM selector_runs").fetchall()[0][0] == "r1"
    finally:
        store.close()


def _markers(db: Path) -> dict[str, str]:
    with sqlite3.connect(db) as conn:
        return dict(conn.execute("SELECT key, value FROM meta WHERE key LIKE 'dirty%'"))


def test_another_process_opening_the_index_keeps_the_daemons_crash_marker(
    db_file: Path,
) -> None:
    daemon_like = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from memoryd.indexer.store import "
            "IndexStore; "
            "s = IndexStore(Path(sys.argv[1])); print('open', flush=True); "
            "time.sleep(60)",
            str(db_file),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert daemon_like.stdout is not None and daemon_like.stdout.readline() == "open\n"
        IndexStore(db_file).close()  # `memoryd index` while the daemon runs
        assert _markers(db_file) == {f"dirty:{daemon_like.pid}": "1"}
    finally:
        daemon_like.kill()
        daemon_like.wait()
    # The "daemon" died without closing: the next opener takes its marker as a
    # crash (and checks the FTS index, see test_index_store), then clears it.
    store = IndexStore(db_file)
    try:
        assert _markers(db_file) == {f"dirty:{os.getpid()}": "1"}
    finally:
        store.close()
    assert _markers(db_file) == {}


def test_temp_files_of_dead_writers_are_removed_at_start(
    make_daemon: Callable[..., DaemonProc],
) -> None:
    d = make_daemon(start=False)
    root = d.roots[0]
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    name = "2025-01-01-10-00-shop.md"
    leftovers = {
        "dead": root / f".{name}.{dead.pid}.abcd1234.tmp",
        "old_unnamed": root / "sub" / f".{name}.k2j3h4g5.tmp",
        "report": d.state_dir / "reports" / f".compaction-2025-01-01.json.{dead.pid}.zz99aa11.tmp",
    }
    kept = {
        "live": root / f".{name}.{os.getpid()}.abcd1234.tmp",
        "new_unnamed": root / f".{name}.q1w2e3r4.tmp",
        "not_ours": root / ".notes.md.tmp",
        "hidden_dir": root / ".git" / f".{name}.{dead.pid}.abcd1234.tmp",
    }
    for path in [*leftovers.values(), *kept.values()]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("half a session")
    os.utime(leftovers["old_unnamed"], (time.time() - 3600, time.time() - 3600))
    d.start()
    assert [k for k, p in leftovers.items() if p.exists()] == []
    assert [k for k, p in kept.items() if not p.exists()] == []
    assert "daemon.temp_files_removed" in d.log()


def test_a_deleted_root_that_returns_is_rescanned_without_waiting_for_a_reconcile(
    make_daemon: Callable[..., DaemonProc],
) -> None:
    d = make_daemon()
    root = d.roots[0]

    def root_status() -> dict[str, object]:
        return d.call("status")["roots"][0]  # type: ignore[no-any-return]

    shutil.rmtree(root)
    wait_until(lambda: root_status()["watcher"] == "missing", 15, "the root marked missing")
    write_memory(root / "feedback_back.md", "the folder is back")  # recreates the root
    # No reindex and no scheduled reconcile (every 300 s): the 1 s check finds it.
    wait_until(lambda: root_status()["files"] == 1, 15, "the returned root rescanned")
    # A pass already under way may scan it a moment before the root is watched again.
    wait_until(lambda: root_status()["watcher"] in ("inotify", "polling"), 15, "watched again")
    write_memory(root / "feedback_later.md", "seen by the new observer")
    wait_until(lambda: root_status()["files"] == 2, 15, "an event from the new observer")


def test_a_report_link_left_by_a_killed_writer_is_removed_at_start(tmp_path: Path) -> None:
    """The `latest` link's temp name follows the temp-file convention the start-up sweep knows."""
    killed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sys; from pathlib import Path; from memoryd.report import files; "
            "os.replace = lambda *a: os._exit(9); "
            "files._link(Path(sys.argv[1]) / 'latest.md', 'compaction-x.md')",
            str(tmp_path),
        ],
    )
    assert killed.returncode == 9
    assert [p.name for p in tmp_path.iterdir() if p.is_symlink()] != []
    assert remove_stale_temps(str(p) for p in tmp_path.iterdir()) == 1
    assert list(tmp_path.iterdir()) == []
