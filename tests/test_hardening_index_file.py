"""``index.db`` deleted or replaced under a running daemon: it starts over from the files.

Before: the writer went on writing the deleted file, each new request thread
failed to open the path, and every request was answered ``index_unavailable``
(or ``internal``, for a replacement that is a database of something else) for
as long as the daemon ran. Now the writer notices that the path no longer
names its file, opens a new one there (its old ``-wal``/``-shm`` removed, a
replacement that is not a sound database set aside), readers reopen, and the
repair fills it from the files.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from daemon_fixtures import DaemonProc, scaled, wait_until, write_memory

from memoryd.errors import IndexUnavailable


def _delete(db: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


def _garbage(db: Path) -> None:
    db.unlink()
    db.write_bytes(b"not a database " * 300)


def _another_database(db: Path) -> None:
    other = db.with_name("other.db")
    with contextlib.closing(sqlite3.connect(other)) as conn:
        conn.execute("CREATE TABLE notes(text)")
        conn.execute("INSERT INTO notes VALUES ('unrelated')")
        conn.commit()
    other.replace(db)  # rename over it, as a restore from elsewhere would


def _names(d: DaemonProc, query: str) -> list[str] | None:
    """The names ``select`` picks, or None while the index is being rebuilt."""
    try:
        with d.client() as c:
            reply = c.call("select", {"dir": str(d.roots[0]), "query": query, "ranker": "local"})
    except IndexUnavailable:
        return None
    return [Path(s["path"]).name for s in reply["selected"]]


@pytest.mark.parametrize("lose", [_delete, _garbage, _another_database])
def test_a_lost_index_file_is_rebuilt_from_the_files(
    make_daemon: Callable[..., DaemonProc], lose: Callable[[Path], None]
) -> None:
    d = make_daemon(start=False)
    write_memory(d.roots[0] / "feedback_lint.md", "always run the linter before committing")
    d.start()
    assert _names(d, "linter") == ["feedback_lint.md"]
    lose(d.db)
    # Written while the index is gone: the files are the truth, nothing is lost.
    write_memory(d.roots[0] / "feedback_tests.md", "run the test suite before pushing")

    # The writer looks at the path once a second; until then it may go on
    # answering from the file it still holds open, so wait for it to notice.
    wait_until(lambda: "index.file_lost" in d.log(), scaled(15), "the daemon to notice")

    def both_found() -> bool:
        found = (_names(d, "linter"), _names(d, "test suite"))
        return found == (["feedback_lint.md"], ["feedback_tests.md"])

    wait_until(both_found, scaled(15), "the rebuilt index to answer with both memories")

    def state() -> str | None:
        try:
            return str(d.call("status")["index"]["state"])
        except IndexUnavailable:  # status met the replaced file before the writer did
            return None

    wait_until(lambda: state() == "ok", scaled(15), "the index state to be ok again")
    with contextlib.closing(sqlite3.connect(d.db)) as conn:  # the daemon's own file again
        assert conn.execute("SELECT count(*) FROM files").fetchone()[0] >= 2
