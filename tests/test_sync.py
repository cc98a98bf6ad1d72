"""Incremental sync: what each kind of change reads, counts and writes; crash recovery."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import MakeMemory, run_unprivileged

from memoryd.file_entries import FileError
from memoryd.indexer import queries
from memoryd.indexer.queries import IndexedFile
from memoryd.indexer.records import file_row
from memoryd.indexer.scanner import stat_entry, walk_dirs
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer, SyncResult, read_file

WORDS = [
    "deploy",
    "migration",
    "pytest",
    "docker",
    "cache",
    "latency",
    "retry",
    "queue",
    "worker",
    "schema",
]


def make_tree(root: Path, count: int, per_dir: int) -> list[Path]:
    """``count`` small memory files in folders of ``per_dir``."""
    files = []
    for i in range(count):
        folder = root / f"project-{i // per_dir:03d}" / "memory"
        folder.mkdir(parents=True, exist_ok=True)
        words = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(6))
        path = folder / f"feedback_{i}.md"
        path.write_text(
            f"---\nname: note {i}\ndescription: {words}\ntype: feedback\n---\n"
            f"{words} {words}\n\n**Why:** {words}\n",
            encoding="utf-8",
        )
        files.append(path)
    return files


def sync(store: IndexStore, root: Path) -> tuple[SyncResult, int]:
    """Run one pass; return its result and the rows the connection really wrote."""
    before = store.conn.total_changes
    result = Syncer(store).sync_tree(str(root))
    return result, store.conn.total_changes - before


def counts(r: SyncResult) -> tuple[int, int, int, int]:
    return (r.added, r.updated, r.removed, r.unchanged)


def indexed_paths(store: IndexStore, root: Path) -> set[str]:
    return {f.path for f in queries.files_under(store.conn, str(root))}


def disk_paths(root: Path) -> set[str]:
    return {str(p) for p in root.rglob("*.md")}


@pytest.fixture
def tree(memdir: Path, make_memory: MakeMemory) -> Path:
    make_memory("feedback_a.md", "alpha rule")
    make_memory("project_b.md", "beta decision", type="project")
    make_memory("reference_c.md", "gamma tool", type="reference")
    make_memory("user_d.md", "delta person", type="user", directory=memdir / "sub")
    return memdir


def row_of(store: IndexStore, path: str) -> IndexedFile | None:
    """The indexed row of ``path``, if it has one."""
    found = queries.files_under(store.conn, os.path.dirname(path))
    return next((f for f in found if f.path == path), None)


def test_cold_then_no_change_writes_nothing(store: IndexStore, tree: Path) -> None:
    cold, written = sync(store, tree)
    assert counts(cold) == (4, 0, 0, 0)
    assert written == cold.rows_written > 0
    again, written = sync(store, tree)
    assert counts(again) == (0, 0, 0, 4)
    assert written == again.rows_written == 0
    assert indexed_paths(store, tree) == disk_paths(tree)


def test_one_file_edited(store: IndexStore, tree: Path) -> None:
    sync(store, tree)
    path = tree / "project_b.md"
    path.write_text(path.read_text() + "\nmore\n")
    result, written = sync(store, tree)
    assert counts(result) == (0, 1, 0, 3)
    assert written == result.rows_written > 0
    row = row_of(store, str(path))
    assert row is not None and row.body.endswith("more\n")


def test_touch_without_content_change(store: IndexStore, tree: Path) -> None:
    sync(store, tree)
    path = tree / "feedback_a.md"
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    result, written = sync(store, tree)
    assert counts(result) == (0, 0, 0, 4)
    # Stat columns refreshed (the file row plus its directory's version), nothing else.
    assert written == result.rows_written == 2
    stored = store.stat_of(str(path))
    assert stored is not None and stored.mtime_ns == st.st_mtime_ns + 5_000_000_000
    # And now the stat matches, so the next pass does not even read it.
    _again, written = sync(store, tree)
    assert written == 0


def test_rewrite_with_equal_bytes_is_a_touch(store: IndexStore, tree: Path) -> None:
    sync(store, tree)
    path = tree / "reference_c.md"
    data = path.read_bytes()
    path.unlink()
    path.write_bytes(data)  # new inode, same content
    result, _written = sync(store, tree)
    assert counts(result) == (0, 0, 0, 4)


def test_delete(store: IndexStore, tree: Path) -> None:
    sync(store, tree)
    (tree / "feedback_a.md").unlink()
    result, written = sync(store, tree)
    assert counts(result) == (0, 0, 1, 3)
    assert written > 0
    assert indexed_paths(store, tree) == disk_paths(tree)


def test_rename(store: IndexStore, tree: Path) -> None:
    sync(store, tree)
    old, new = tree / "project_b.md", tree / "project_b_renamed.md"
    old.rename(new)
    result, _written = sync(store, tree)
    assert counts(result) == (1, 0, 1, 3)
    assert row_of(store, str(old)) is None
    row = row_of(store, str(new))
    assert row is not None and row.description == "beta decision"


def test_directory_deleted(store: IndexStore, tree: Path, make_memory: MakeMemory) -> None:
    make_memory("feedback_e.md", "epsilon", directory=tree / "sub" / "deeper")
    sync(store, tree)
    shutil.rmtree(tree / "sub")
    result, _written = sync(store, tree)
    assert counts(result) == (0, 0, 2, 3)
    assert indexed_paths(store, tree) == disk_paths(tree)


def test_new_subdirectory(store: IndexStore, tree: Path, make_memory: MakeMemory) -> None:
    sync(store, tree)
    make_memory("feedback_f.md", "phi", directory=tree / "newdir")
    make_memory("feedback_g.md", "chi", directory=tree / "newdir")
    result, _written = sync(store, tree)
    assert counts(result) == (2, 0, 0, 4)
    assert indexed_paths(store, tree) == disk_paths(tree)


def test_a_stopped_pass_ends_early_and_deletes_nothing_it_did_not_see(
    store: IndexStore, tree: Path, make_memory: MakeMemory
) -> None:
    sync(store, tree)
    before = indexed_paths(store, tree)
    make_memory("feedback_f.md", "phi", directory=tree / "newdir")
    asked = []

    def stop_after_first_directory() -> bool:
        asked.append(1)
        return len(asked) > 1

    result = Syncer(store, should_stop=stop_after_first_directory).sync_trees([str(tree)])
    assert result.stopped and len(asked) == 2
    # Directories it never reached are neither indexed nor treated as deleted.
    assert indexed_paths(store, tree) == before
    assert result.removed == 0
    assert not Syncer(store).sync_tree(str(tree)).stopped
    assert indexed_paths(store, tree) == disk_paths(tree)


class Counted:
    """A progress report that only counts."""

    def __init__(self) -> None:
        self.done = 0

    def advance(self) -> None:
        self.done += 1


def test_a_first_index_stopped_between_directories_keeps_those_it_indexed(
    tmp_path: Path,
) -> None:
    root = tmp_path / "tree"
    make_tree(root, 30, per_dir=10)
    store = IndexStore(tmp_path / "index.db")
    progress = Counted()

    def stop_once_15_files_are_done() -> bool:
        return progress.done >= 15

    try:
        result = Syncer(
            store, progress=progress, should_stop=stop_once_15_files_are_done
        ).sync_tree(str(root))
        # The stop waits for the end of the directory it came in.
        assert result.stopped and result.added == progress.done == 20
        # The two directories reached are indexed, searchable, and not read again.
        assert len(indexed_paths(store, root)) == 20
        store.conn.execute("INSERT INTO files_fts(files_fts) VALUES ('integrity-check')")
        assert store.conn.execute("SELECT count(*) FROM files_fts").fetchone()[0] == 20
        rest = Syncer(store).sync_tree(str(root))
        assert (rest.added, rest.unchanged, rest.stopped) == (10, 20, False)
        assert indexed_paths(store, root) == disk_paths(root)
    finally:
        store.close()


def test_a_first_pass_over_a_tree_without_memories_takes_no_write_lock(tmp_path: Path) -> None:
    (tmp_path / "tree" / "empty" / "memory").mkdir(parents=True)
    (tmp_path / "tree" / "notes.txt").write_text("not a memory")
    store = IndexStore(tmp_path / "index.db")
    store.set_busy_timeout(0)
    other = sqlite3.connect(tmp_path / "index.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another writer holds the lock throughout
    try:
        result = Syncer(store).sync_tree(str(tmp_path / "tree"))
        assert (result.added, result.rows_written, result.stopped) == (0, 0, False)
    finally:
        other.execute("ROLLBACK")
        other.close()
        store.close()


def test_skipped_names_and_dirs(store: IndexStore, tree: Path, make_memory: MakeMemory) -> None:
    make_memory(".hidden.md", "x")
    make_memory("notes.txt", "x")
    make_memory("feedback_x.md", "x", directory=tree / ".git")
    make_memory("feedback_y.md", "x", directory=tree / "node_modules")
    result, _written = sync(store, tree)
    assert result.added == 4


def test_parse_error_rewritten_only_when_file_changes(store: IndexStore, memdir: Path) -> None:
    bad = memdir / "feedback_bad.md"
    bad.write_text("no header\n")
    first, _ = sync(store, memdir)
    assert first.added == 1
    assert queries.errors_under(store.conn, str(memdir))[0]["error"].startswith("no frontmatter")
    _again, written = sync(store, memdir)
    assert written == 0
    bad.write_text("---\ndescription: fixed now\n---\n")
    fixed, _ = sync(store, memdir)
    assert counts(fixed) == (0, 1, 0, 0)
    assert queries.errors_under(store.conn, str(memdir)) == []


def test_broken_symlink_and_loop_are_indexed_as_errors(store: IndexStore, memdir: Path) -> None:
    os.symlink("missing.md", memdir / "feedback_link.md")
    os.symlink("loop.md", memdir / "loop.md")
    result, _ = sync(store, memdir)
    assert result.added == 2
    errors = {
        Path(e["path"]).name: e["error"] for e in queries.errors_under(store.conn, str(memdir))
    }
    assert errors["feedback_link.md"] == "broken symlink: target 'missing.md' does not exist"
    assert errors["loop.md"].startswith("symlink loop")
    # Unreadable files are retried each pass, but an unchanged outcome writes nothing.
    _again, written = sync(store, memdir)
    assert written == 0


def test_unreadable_file_is_reported_then_recovered(world_tmp: Path) -> None:
    memdir = world_tmp / "memory"
    memdir.mkdir()
    memdir.chmod(0o777)
    path = memdir / "feedback_locked.md"
    path.write_text("---\ndescription: locked away\n---\n")
    path.chmod(0o000)
    db = world_tmp / "index.db"

    def index_once() -> tuple[tuple[int, int, int, int], list[FileError], int]:
        st = IndexStore(db)
        try:
            result, written = sync(st, memdir)
            return counts(result), queries.errors_under(st.conn, str(memdir)), written
        finally:
            st.close()

    first, errors, _ = run_unprivileged(index_once)
    assert first == (1, 0, 0, 0)
    assert errors == [{"path": str(path), "error": "unreadable: permission denied"}]
    # Still locked: retried, same outcome, no rows written.
    _, _, written = run_unprivileged(index_once)
    assert written == 0
    # chmod does not change mtime; the retry still notices the file is readable now.
    path.chmod(0o644)
    fixed, errors, _ = run_unprivileged(index_once)
    assert fixed == (0, 1, 0, 0)
    assert errors == []


def test_sync_path_single_file_and_vanished_dir(
    store: IndexStore, tree: Path, make_memory: MakeMemory
) -> None:
    sync(store, tree)
    syncer = Syncer(store)
    new = make_memory("feedback_new.md", "fresh")
    assert syncer.sync_path(str(new)).added == 1
    new.unlink()
    assert syncer.sync_path(str(new)).removed == 1
    shutil.rmtree(tree / "sub")
    assert syncer.sync_path(str(tree / "sub")).removed == 1
    assert indexed_paths(store, tree) == disk_paths(tree)


def test_sync_listing_compares_names_only_and_leaves_subfolders_alone(
    store: IndexStore, tree: Path, make_memory: MakeMemory
) -> None:
    sync(store, tree)
    syncer = Syncer(store)
    edited = tree / "feedback_a.md"
    edited.write_text(edited.read_text() + "\nan edit names its own file in its event\n")
    (tree / "project_b.md").unlink()
    make_memory("feedback_new.md", "appeared without an event of its own")
    (tree / "notes.md.d").mkdir()  # a directory, whatever its name, is no memory
    (tree / "sub" / "user_d.md").unlink()  # below: the subfolder's own events say so
    result = syncer.sync_listing(str(tree))
    assert counts(result) == (1, 0, 1, 0)
    assert row_of(store, str(tree / "feedback_new.md")) is not None
    assert row_of(store, str(tree / "project_b.md")) is None
    assert indexed_paths(store, tree) == disk_paths(tree) | {str(tree / "sub" / "user_d.md")}
    assert syncer.sync_path(str(edited)).updated == 1
    shutil.rmtree(tree / "sub")
    assert syncer.sync_listing(str(tree / "sub")).removed == 1  # gone: full treatment
    assert indexed_paths(store, tree) == disk_paths(tree)


# -- crash recovery ---------------------------------------------------------


def _rows(db: Path) -> int:
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.05)
        try:
            return int(conn.execute("SELECT count(*) FROM files").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def _opened(db: Path) -> bool:
    """Whether a writer has opened the index (its ``dirty:<pid>`` marker is in ``meta``)."""
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.05)
        try:
            marker = "SELECT count(*) FROM meta WHERE key LIKE 'dirty:%'"
            return bool(conn.execute(marker).fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return False


def _write_locked(db: Path) -> bool:
    conn = sqlite3.connect(db, timeout=0, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError:
        return True
    finally:
        conn.close()


def _kill_index_when(root: Path, db: Path, ready: Callable[[], bool], what: str) -> None:
    """Start a daemon indexing ``root`` into ``db`` and SIGKILL it as soon as ``ready()`` holds."""
    run = Path(tempfile.mkdtemp(prefix="md-", dir="/tmp"))  # AF_UNIX paths hold 107 bytes
    where = ["--socket", str(run / "memoryd.sock"), "--state-dir", str(db.parent / "state")]
    proc = subprocess.Popen(
        [sys.executable, "-m", "memoryd", "serve", "--root", str(root), "--db", str(db), *where],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not ready():
            assert proc.poll() is None, "the daemon stopped before it could be killed"
            assert time.monotonic() < deadline, what
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
        shutil.rmtree(run, ignore_errors=True)
    assert proc.returncode == -signal.SIGKILL


def test_kill_9_mid_index_is_repaired_by_the_next_run(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    total = 3000
    files = make_tree(root, total, per_dir=250)
    db = tmp_path / "index.db"
    # An index that already holds something is updated in batches (an empty one
    # is bulk-loaded in one transaction: see the next test).
    seed = make_tree(tmp_path / "seed", 1, per_dir=1)
    seeded = IndexStore(db)
    Syncer(seeded).sync_tree(str(seed[0].parent))
    seeded.close()
    _kill_index_when(root, db, lambda: _rows(db) > 1, "no rows appeared")
    at_kill = _rows(db) - 1
    assert 0 < at_kill < total, f"killed after {at_kill} rows: not mid-run"

    # The disk moves on while nobody is indexing.
    files[0].unlink()
    files[-1].write_text(files[-1].read_text() + "\nzanzibarword\n")

    st = IndexStore(db)
    try:
        result = Syncer(st).sync_tree(str(root))
        assert result.added + result.unchanged + result.updated == total - 1
        assert indexed_paths(st, root) == disk_paths(root)
        st.conn.execute("INSERT INTO files_fts(files_fts) VALUES ('integrity-check')")
        hits = st.conn.execute(
            "SELECT f.path FROM files_fts JOIN files f ON f.rowid = files_fts.rowid "
            "WHERE files_fts MATCH 'zanzibarword'"
        ).fetchall()
        assert [h[0] for h in hits] == [str(files[-1])]
        assert (
            st.conn.execute(
                "SELECT count(*) FROM files_fts WHERE files_fts MATCH 'deploy'"
            ).fetchone()[0]
            > 0
        )
    finally:
        st.close()


def test_kill_9_mid_bulk_first_index_leaves_nothing_half_done(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    total = 3000
    make_tree(root, total, per_dir=500)
    db = tmp_path / "index.db"
    # Once the index is open and stamped, the next write lock is the bulk load's
    # transaction: kill while it is held and before anything is committed.
    _kill_index_when(
        root,
        db,
        lambda: _opened(db) and _write_locked(db) and _rows(db) == 0,
        "the bulk load never started",
    )
    assert _rows(db) == 0
    st = IndexStore(db)
    try:
        # The insert trigger dropped for the load came back with the rollback.
        trigger = "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name = 'files_ai'"
        assert st.conn.execute(trigger).fetchone()[0] == 1
        result = Syncer(st).sync_tree(str(root))
        assert result.added == total
        assert indexed_paths(st, root) == disk_paths(root)
        st.conn.execute("INSERT INTO files_fts(files_fts) VALUES ('integrity-check')")
        fts_rows = st.conn.execute("SELECT count(*) FROM files_fts").fetchone()[0]
        assert fts_rows == total
    finally:
        st.close()


def test_bulk_first_index_equals_batched_index(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    make_tree(root, 2500, per_dir=400)
    (root / "project-000" / "memory" / "broken.md").write_bytes(b"\xff\xfe not utf-8")
    bulk = IndexStore(tmp_path / "bulk.db")
    assert bulk.is_empty()
    Syncer(bulk).sync_tree(str(root))
    batched = IndexStore(tmp_path / "batched.db")
    Syncer(batched).sync_tree(str(make_tree(tmp_path / "seed", 1, per_dir=1)[0].parent))
    Syncer(batched).sync_tree(str(root))
    columns = "path, kind, name, description, body, content_hash, error, grams"
    for store in (bulk, batched):
        store.conn.execute("INSERT INTO files_fts(files_fts) VALUES ('integrity-check')")
    rows = [
        s.conn.execute(
            f"SELECT {columns} FROM files WHERE path LIKE ? ORDER BY path", (f"{root}/%",)
        ).fetchall()
        for s in (bulk, batched)
    ]
    assert len(rows[0]) == 2501
    assert [tuple(r) for r in rows[0]] == [tuple(r) for r in rows[1]]
    for word in ("deploy", "retry", "schema"):
        hits = [
            s.conn.execute(
                "SELECT f.path FROM files_fts JOIN files f ON f.rowid = files_fts.rowid "
                "WHERE files_fts MATCH ? AND f.path LIKE ? ORDER BY f.path",
                (word, f"{root}/%"),
            ).fetchall()
            for s in (bulk, batched)
        ]
        assert hits[0] and [h[0] for h in hits[0]] == [h[0] for h in hits[1]]
    bulk.close()
    batched.close()


def test_bulk_load_keeps_rows_another_writer_added_after_the_empty_check(tmp_path: Path) -> None:
    # The syncer sees an empty index, walks the tree, then loads it; a second
    # writer (`memoryd index` beside the daemon) may index some paths in between.
    root = tmp_path / "tree"
    files = make_tree(root, 30, per_dir=10)
    db = tmp_path / "index.db"
    store = IndexStore(db)
    assert store.is_empty()
    other = IndexStore(db)
    Syncer(other).sync_path(str(files[3]))
    other.close()
    files[3].write_text("---\nname: rewritten\ndescription: d\ntype: user\n---\nnew body\n")
    stats = [st for d, entries in walk_dirs(str(root)) for e in entries if (st := stat_entry(e, d))]
    try:
        store.load_fresh(file_row(*read_file(st), time.time()) for st in stats)
        assert indexed_paths(store, root) == disk_paths(root)
        name = store.conn.execute("SELECT name FROM files WHERE path = ?", (str(files[3]),))
        assert name.fetchone()[0] == "rewritten"
        store.conn.execute("INSERT INTO files_fts(files_fts) VALUES ('integrity-check')")
        assert store.conn.execute("SELECT count(*) FROM files_fts").fetchone()[0] == 30
    finally:
        store.close()
