"""Whatever sits at a session path: a FIFO, a directory, a device link, a huge file.

Every read of a file someone can place is capped at 1 MiB, opened without
blocking, and (for session files, which memoryd writes itself) without
following a symbolic link; what is not a regular file gets ``not_a_file``
instead of a hang, ``internal`` or a gigabyte of memory.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from daemon_fixtures import DaemonProc

from memoryd.bounded_read import MAX_READ_BYTES, NotAFile, read_capped
from memoryd.errors import RequestError
from memoryd.indexer.parse import parse_file
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.sessions import files as session_io

PROJECT = "shop"
SESSION = "2025-06-01-10-00"
NAME = f"{SESSION}-{PROJECT}.md"


def session_text(summary: str = "worked on the cart") -> str:
    return (
        f"---\nproject-name: {PROJECT}\nsession: {SESSION}\nschema_version: '1.1'\n---\n"
        f"## Session summary\n{summary}\n"
    )


def test_read_capped_refuses_what_is_not_a_regular_file(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.md"
    os.mkfifo(fifo)
    with pytest.raises(NotAFile, match="FIFO"):
        read_capped(str(fifo))  # a blocking open would wait here for a writer forever
    with pytest.raises(NotAFile, match="directory"):
        read_capped(str(tmp_path))
    with pytest.raises(NotAFile, match="character device"):
        read_capped("/dev/zero")
    link = tmp_path / "link.md"
    link.symlink_to("/dev/null")
    with pytest.raises(NotAFile, match="symbolic link"):
        read_capped(str(link), follow=False)
    big = tmp_path / "big.md"
    big.write_bytes(b"x" * (MAX_READ_BYTES + 10))
    data, more = read_capped(str(big))
    assert (len(data), more) == (MAX_READ_BYTES, True)


def test_the_indexer_never_blocks_on_a_fifo_swapped_in(tmp_path: Path) -> None:
    fifo = tmp_path / "feedback_pipe.md"
    os.mkfifo(fifo)
    parsed = parse_file(str(fifo), fifo.name, 10)  # as if a stat had seen a 10-byte file
    assert parsed.error == "not a regular file: it is a FIFO (named pipe)"


def test_save_onto_something_that_is_not_a_session_file_is_not_a_file(
    daemon: DaemonProc,
) -> None:
    folder = daemon.roots[0]
    planted: dict[str, Callable[[Path], object]] = {
        "fifo": os.mkfifo,
        "directory": Path.mkdir,
        "link to /dev/zero": lambda p: p.symlink_to("/dev/zero"),  # used to grow to 1.85 GB
        "dangling link": lambda p: p.symlink_to(folder / "gone.md"),
    }
    for hour, (kind, plant) in enumerate(planted.items(), start=10):
        session = f"2025-06-01-{hour}-00"
        target = folder / f"{session}-{PROJECT}.md"
        plant(target)
        with daemon.client(timeout=15) as c, pytest.raises(RequestError) as err:
            c.call("save", {"dir": str(folder), "project": PROJECT, "session": session})
        assert err.value.code == "not_a_file", (kind, err.value.message)
        assert str(target) in err.value.message
        assert os.path.lexists(target)  # left as it was
    assert [p.name for p in folder.iterdir() if p.name.endswith(".tmp")] == []
    assert daemon.call("status")["state"] == "ready"


def test_huge_session_files_give_bounded_answers(make_daemon: Callable[..., DaemonProc]) -> None:
    d = make_daemon()
    folder = d.roots[0]
    # 8 MB: a load_last used to read (and answer) all of it, context to parse all of it.
    (folder / NAME).write_text(session_text("cart " * 1_600_000))
    d.call("reindex", {"dir": str(folder)})
    last = d.call("load_last", {"dir": str(folder), "project": PROJECT})
    assert last["found"] and last["truncated"] is True
    assert len(last["content"]) <= MAX_READ_BYTES and "cap" in last["warning"]
    brief = d.call("context", {"task": "the cart", "dir": str(folder), "project": PROJECT})
    assert brief["sessions_read"] == [NAME] and brief["skipped"] == []


def test_a_fifo_that_replaced_an_indexed_session_is_skipped_with_its_reason(
    store: IndexStore, memdir: Path
) -> None:
    (memdir / NAME).write_text(session_text())
    Syncer(store).sync_tree(str(memdir))
    os.unlink(memdir / NAME)
    os.mkfifo(memdir / NAME)  # the index has not caught up: its row still says a file
    last = session_io.load_last(store.conn, str(memdir), PROJECT)
    reason = "not a regular file: it is a FIFO (named pipe)"
    assert last["found"] is False and last["skipped"] == [{"filename": NAME, "reason": reason}]
    brief = session_io.context(store.conn, [str(memdir)], "the cart", PROJECT, 600)
    assert brief["skipped"] == [{"filename": NAME, "error": reason}]
