"""Reading a watched folder must cost the daemon nothing: no events, no index writes."""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

from daemon_fixtures import DaemonProc, wait_until, write_memory

from memoryd.daemon.watcher import Watcher, split_batch

FILES = 40


def _read_everything(folder: Path) -> int:
    """What ``cat``, grep, backups and IDE indexers do: open, read, close, many times."""
    total = 0
    for _ in range(3):
        for path in sorted(folder.rglob("*.md")):
            with path.open("rb") as fh:
                total += len(fh.read())
    return total


def test_reads_never_reach_the_watcher(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    root.mkdir()
    for i in range(FILES):
        write_memory(root / f"feedback_note_{i}.md", f"note {i}")
    reconciled: set[str] = set()
    listed: set[str] = set()
    got = threading.Event()

    def on_paths(paths: set[str], listings: set[str]) -> None:
        reconciled.update(paths)
        listed.update(listings)
        if str(sentinel) in paths:
            got.set()

    sentinel = root / "feedback_sentinel.md"
    watcher = Watcher(on_paths, settle=0.02)
    try:
        assert watcher.add_root(str(root)) == "inotify"
        assert _read_everything(root) > 0
        # Events arrive in order: once the sentinel's write is delivered, any event
        # the reads caused would have reached the handler before it.
        write_memory(sentinel, "written after the reads")
        wait_until(got.is_set, timeout=10, what="sentinel delivered")
        received = watcher.events_received
    finally:
        watcher.stop()
    assert reconciled == {str(sentinel)}
    assert listed <= {str(root)}  # the folder's own "modified" event, if not in the same batch
    # Only the sentinel's own create/modify/close (and its folder's) events; 3 x 40
    # reads would add 240 open and close-without-write events without the filter.
    assert received <= 10, received


def test_a_folder_event_without_a_memory_event_asks_for_a_listing(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    root.mkdir()
    batches: list[tuple[set[str], set[str]]] = []
    watcher = Watcher(lambda paths, listed: batches.append((paths, listed)), settle=0.02)
    try:
        watcher.add_root(str(root))
        (root / "notes.txt").write_text("not a memory, but the folder changed")
        wait_until(lambda: any(str(root) in listed for _, listed in batches), what="listing")
    finally:
        watcher.stop()
    assert all(paths == set() for paths, _ in batches)


def test_a_batch_lists_only_folders_no_memory_event_in_it_explains() -> None:
    batch = {"/m/a.md": False, "/m": True, "/n": True, "/m/sub": False, "/m/sub/x": True}
    paths, listed = split_batch(batch)
    assert paths == {"/m/a.md", "/m/sub"}
    # /m has a.md's own event; /m/sub is reconciled whole; /m/sub/x and /n are listed.
    assert listed == {"/n", "/m/sub/x"}


def test_daemon_does_no_index_work_for_reads(daemon: DaemonProc) -> None:
    root = daemon.roots[0]
    for i in range(FILES):
        _save(root / f"project_topic_{i}.md", f"topic {i}")
    wait_until(
        lambda: len(daemon.call("list", {"dir": str(root)})["files"]) == FILES,
        what="all files indexed",
    )
    versions, rows = _versions(daemon), _rows(daemon)
    _read_everything(root)
    # The rename event of a save after the reads is processed after anything the
    # reads could have caused, so once it is listed the index must show exactly
    # one more write and every other row untouched.
    _save(root / "feedback_sentinel.md", "saved after the reads")
    wait_until(
        lambda: len(daemon.call("list", {"dir": str(root)})["files"]) == FILES + 1,
        what="sentinel indexed",
    )
    assert _versions(daemon) == {d: v + (d == str(root)) for d, v in versions.items()}
    after = _rows(daemon)
    assert after.pop(str(root / "feedback_sentinel.md"))
    assert after == rows


def _save(path: Path, description: str) -> None:
    """An atomic save (temp file + rename): one event, so one index write per file."""
    os.replace(write_memory(path.with_suffix(".tmp"), description), path)


def _versions(daemon: DaemonProc) -> dict[str, int]:
    with sqlite3.connect(f"file:{daemon.db}?mode=ro", uri=True) as conn:
        return dict(conn.execute("SELECT path, version FROM directories"))


def _rows(daemon: DaemonProc) -> dict[str, float]:
    with sqlite3.connect(f"file:{daemon.db}?mode=ro", uri=True) as conn:
        return dict(conn.execute("SELECT path, indexed_at FROM files"))
