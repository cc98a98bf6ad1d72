"""A full disk, a held write lock, damage found while running: the daemon serves and catches up.

The disk is filled without root through the daemon's own file-size limit
(RLIMIT_FSIZE, lowered and raised from outside with ``prlimit``): SQLite sees
the same failed writes as on a full disk. The lock is held by a second
connection, as another ``memoryd index`` or a backup tool would.
"""

from __future__ import annotations

import errno
import random
import resource
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import pytest
from daemon_fixtures import DaemonProc, scaled, wait_until, write_memory

from memoryd.daemon.health import DEGRADED, MAX_BACKOFF_S, OK, Health
from memoryd.errors import StoreError, Unwritable
from memoryd.indexer import recovery
from memoryd.indexer.store import IndexStore
from memoryd.methods import Save
from memoryd.params import decode
from memoryd.report.document import Report
from memoryd.report.files import write_report
from memoryd.sessions import files as sessions

PROJECT = "shop"


def save(d: DaemonProc, session: str, summary: str = "worked on the cart") -> dict[str, Any]:
    params = {"dir": str(d.roots[0]), "project": PROJECT, "session": session}
    result: dict[str, Any] = d.call("save", {**params, "session_summary": summary})
    return result


def last_session(d: DaemonProc) -> str | None:
    found = d.call("load_last", {"dir": str(d.roots[0]), "project": PROJECT})
    return found["filename"] if found["found"] else None


def index_state(d: DaemonProc) -> str:
    state: str = d.call("status")["index"]["state"]
    return state


@contextmanager
def held_write_lock(db: Path) -> Iterator[None]:
    """Another process's write transaction on the index, as ``memoryd index`` would hold."""
    conn = sqlite3.connect(str(db), isolation_level=None, timeout=30)
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        conn.execute("ROLLBACK")
        conn.close()


def set_file_limit(d: DaemonProc, limit: int) -> None:
    """The daemon's soft file-size limit (the hard one stays unlimited, so it can be raised)."""
    assert d.proc is not None
    resource.prlimit(d.proc.pid, resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))


def test_a_held_write_lock_degrades_then_converges(
    make_daemon: Callable[..., DaemonProc],
) -> None:
    d = make_daemon()
    write_memory(d.roots[0] / "feedback_cart.md", "the cart total rounds half up")
    wait_until(lambda: d.call("list", {"dir": str(d.roots[0])})["files"], 10, "first file")
    with held_write_lock(d.db):
        saved = save(d, "2025-06-01-10-00")  # waits out the busy timeout once, then answers
        assert saved["index_pending"] is True
        assert "index cannot be written now" in saved["notes"][0]
        assert (d.roots[0] / saved["filename"]).is_file()
        status = d.call("status")["index"]
        assert status["state"] == "degraded" and "locked" in status["reason"]
        assert saved["path"] in status["pending_saves"]
        # Reads go on: what the index held before the lock is still served.
        picked = d.call("select", {"query": "how does the cart round", "dir": str(d.roots[0])})
        assert [s["filename"] for s in picked["selected"]] == ["feedback_cart.md"]
        again = save(d, "2025-06-01-11-00")  # no second 10 s wait once degraded
        assert again["index_pending"] is True
    # Nothing asks for it: the writer's own retry indexes what it missed.
    wait_until(lambda: last_session(d) == again["filename"], scaled(40), "the saves indexed")
    assert index_state(d) == "ok"
    assert d.call("status")["index"]["recovered_at"] is not None


def test_a_full_disk_degrades_reads_go_on_and_it_converges_when_space_returns(
    make_daemon: Callable[..., DaemonProc],
) -> None:
    d = make_daemon()
    root = d.roots[0]
    write_memory(root / "feedback_cart.md", "the cart total rounds half up")
    wait_until(lambda: d.call("list", {"dir": str(root)})["files"], 10, "first file")
    size = d.db.stat().st_size + Path(f"{d.db}-wal").stat().st_size
    set_file_limit(d, max(size, 64 * 1024) + 16 * 1024)  # the index can barely grow now
    rng = random.Random(4)
    bulky = " ".join(f"word{rng.randrange(10**6)}" for _ in range(4000))  # ~45 KB each
    for i in range(40):
        write_memory(root / f"project_bulk_{i}.md", f"bulk memory {i}", body=bulky)
    wait_until(lambda: index_state(d) == "degraded", scaled(20), "the index degraded")
    saved = save(d, "2025-06-02-10-00")
    assert saved["index_pending"] is True
    picked = d.call("select", {"query": "how does the cart round", "dir": str(root)})
    assert [s["filename"] for s in picked["selected"]] == ["feedback_cart.md"]
    set_file_limit(d, resource.RLIM_INFINITY)  # space returns

    def converged() -> bool:
        listing = d.call("list", {"dir": str(root)})
        return len(listing["files"]) == 42 and last_session(d) == saved["filename"]

    wait_until(converged, scaled(60), "every file and the save indexed")
    assert index_state(d) == "ok"
    assert "Traceback" not in d.log()


def test_a_first_index_into_a_full_disk_serves_and_finishes_later(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    root = tmp_path / "memory"
    body = " ".join(f"term{i}" for i in range(3000))
    for i in range(250):  # a bulk first index
        write_memory(root / f"feedback_{i}.md", f"memory number {i}", body=body)
    d = make_daemon(roots=[root], start=False)
    # Room for an empty index and little else: the first index cannot be written.
    limit = (400_000, resource.RLIM_INFINITY)
    d.start(preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, limit))
    assert index_state(d) == "degraded"  # ready, serving, and saying why it is incomplete
    assert d.call("status")["state"] == "ready"
    set_file_limit(d, resource.RLIM_INFINITY)
    wait_until(
        lambda: len(d.call("list", {"dir": str(root)})["files"]) == 250,
        scaled(60),
        "the first index finished",
    )
    assert index_state(d) == "ok"


def test_an_index_damaged_while_running_is_rebuilt_like_at_start(
    make_daemon: Callable[..., DaemonProc],
) -> None:
    d = make_daemon()
    root = d.roots[0]
    for i in range(300):
        write_memory(root / f"feedback_{i}.md", f"memory number {i} about caching")
    d.call("reindex", {})
    with sqlite3.connect(str(d.db)) as conn:  # fold the WAL in, so reads use the file
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = d.db.stat().st_size
    with d.db.open("r+b") as fh:  # pages overwritten under the running daemon
        fh.seek(8192)
        fh.write(random.Random(2).randbytes(size - 8192))
    codes = set()
    for _ in range(3):
        try:
            d.call("list", {"dir": str(root)})
            codes.add("ok")
        except Exception as exc:
            codes.add(getattr(exc, "code", type(exc).__name__))
    assert "internal" not in codes, d.log()

    def rebuilt() -> bool:
        try:
            return len(d.call("list", {"dir": str(root)})["files"]) == 300
        except Exception:
            return False

    wait_until(rebuilt, scaled(30), "the index rebuilt from the files")
    assert list(d.db.parent.glob("index.db.corrupt-*"))
    assert "index.damaged_while_running" in d.log()
    d.log_path.write_text(d.log().replace("Traceback", "traceback"))  # sqlite's own report


def test_trouble_tells_a_full_disk_and_a_held_lock_from_damage_and_bugs(tmp_path: Path) -> None:
    store = IndexStore(tmp_path / "index.db")
    try:
        pages = store.conn.execute("PRAGMA page_count").fetchone()[0]
        store.conn.execute(f"PRAGMA max_page_count = {pages}")  # a disk with no room left
        with pytest.raises(sqlite3.Error) as full, store.transaction() as conn:
            conn.execute("CREATE TABLE filler (x)")
            conn.execute("INSERT INTO filler VALUES (zeroblob(1000000))")
        assert recovery.trouble(full.value) == (recovery.UNWRITABLE, "database or disk is full")
        assert not store.conn.in_transaction  # rolled back: the next write can succeed
        store.conn.execute("PRAGMA max_page_count = 1073741823")
        with held_write_lock(store.path):
            store.set_busy_timeout(0)
            with pytest.raises(StoreError) as locked, store.transaction():
                pass
        assert recovery.trouble(locked.value) == (recovery.UNWRITABLE, "database is locked")
    finally:
        store.close()
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database at all" * 100)
    with pytest.raises(sqlite3.DatabaseError) as damaged:
        sqlite3.connect(str(garbage)).execute("SELECT * FROM sqlite_master").fetchall()
    assert recovery.trouble(damaged.value) == (recovery.DAMAGED, "file is not a database")
    assert recovery.trouble(ValueError("a bug")) is None


def test_retries_back_off_and_stop_once_recovered() -> None:
    now = [0.0]
    health = Health(clock=lambda: now[0])
    assert health.wait_s() is None and health.state == OK
    delays = [health.failed("database or disk is full") for _ in range(9)]
    assert delays[:4] == [0.5, 1.0, 2.0, 4.0] and delays[-1] == MAX_BACKOFF_S
    assert health.state == DEGRADED and health.wait_s() == MAX_BACKOFF_S
    # A repair that fails after its probe passed waits longer: it is the costly part.
    assert health.failed("database or disk is full", repair=True) > MAX_BACKOFF_S
    now[0] += 100
    assert health.wait_s() == 0.0  # due: the writer runs its repair now
    health.pending("/m/2025-06-01-10-00-shop.md")
    assert health.to_json()["pending_saves"] == ["/m/2025-06-01-10-00-shop.md"]
    health.recovered()
    assert health.wait_s() is None and health.to_json()["pending_saves"] == []


def test_saves_and_reports_onto_a_full_disk_are_unwritable_not_internal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk under the memory folder (not the index's) is full: the write itself fails."""
    folder = tmp_path / "memory"
    folder.mkdir()

    def full_disk(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(tempfile, "mkstemp", full_disk)
    request = sessions.save_request(
        decode(Save, {"dir": str(folder), "project": PROJECT, "session_summary": "x"})
    )
    with pytest.raises(Unwritable) as err:
        sessions.save(request)
    assert err.value.data["errno"] == "ENOSPC" and "nothing was written" in err.value.message
    with pytest.raises(Unwritable) as err:
        write_report(cast("Report", {"stamp": "20250601T000000Z"}), tmp_path / "reports")
    assert err.value.code == "unwritable" and err.value.data["errno"] == "ENOSPC"
