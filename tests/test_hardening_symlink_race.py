"""A memory swapped for a link to a file outside its root is never read, however the swap is timed.

Each test plays one interleaving of the race for real, in order: the file is
seen as a regular file (stat'ed, indexed), then swapped for a link (or its
directory for a link to another directory), then read. The outside file
holds a secret text that must never come back.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from daemon_fixtures import write_memory

from memoryd._delivery import memory_text
from memoryd.bounded_read import OutsideFolder, readable
from memoryd.indexer import queries
from memoryd.indexer.scanner import stat_path
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer, read_file
from memoryd.methods import Select as SelectRequest
from memoryd.select.selector import Selector

SECRET = "zebra-secret-outside-the-root"


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "mem"
    write_memory(root / "feedback_deploy.md", "How we deploy the billing service", body="Use make.")
    outside = tmp_path / "elsewhere"
    write_memory(outside / "feedback_deploy.md", f"deploy billing {SECRET}", body=SECRET)
    return root, outside


def swap_for_link(path: Path, target: Path) -> None:
    tmp = path.with_name(".swap")
    os.symlink(target, tmp)
    os.replace(tmp, path)  # atomic, as a racing agent would do it


def test_a_file_swapped_after_its_stat_is_not_read_at_index_time(world: tuple[Path, Path]) -> None:
    root, outside = world
    memory = root / "feedback_deploy.md"
    boundary = os.path.realpath(root)
    st = stat_path(str(memory), boundary)
    assert st is not None and st.stat_error is None  # checked: a regular file inside the root
    swap_for_link(memory, outside / "feedback_deploy.md")
    _st, parsed = read_file(st, boundary)
    assert parsed.error is not None and "outside its root" in parsed.error
    assert SECRET not in repr(parsed)


def test_a_directory_swapped_for_a_link_is_not_read_through(world: tuple[Path, Path]) -> None:
    root, outside = world
    sub = root / "team"
    write_memory(sub / "feedback_deploy.md", "team deploy notes")
    boundary = os.path.realpath(root)
    st = stat_path(str(sub / "feedback_deploy.md"), boundary)
    assert st is not None and st.stat_error is None
    (sub / "feedback_deploy.md").unlink()
    sub.rmdir()
    os.symlink(outside, sub)
    _st, parsed = read_file(st, boundary)
    assert parsed.error is not None and SECRET not in repr(parsed)


def test_a_link_inside_the_root_is_still_followed(world: tuple[Path, Path]) -> None:
    root, _outside = world
    os.symlink("feedback_deploy.md", root / "feedback_alias.md")
    boundary = os.path.realpath(root)
    st = stat_path(str(root / "feedback_alias.md"), boundary)
    assert st is not None
    _st, parsed = read_file(st, boundary)
    assert parsed.error is None and parsed.description == "How we deploy the billing service"


def test_swapped_after_indexing_it_is_neither_selected_nor_shown(
    world: tuple[Path, Path], tmp_path: Path
) -> None:
    root, outside = world
    memory = root / "feedback_deploy.md"
    store = IndexStore(tmp_path / "index.db")
    try:
        Syncer(store).sync_tree(str(root))
        req = SelectRequest(query="how do we deploy billing", dir=str(root), ranker="local")
        directory = os.path.realpath(root)
        before = Selector().run(store.conn, req, directory, "r1").result
        assert [s["filename"] for s in before["selected"]] == ["feedback_deploy.md"]
        # Swapped after the index saw a regular file, before anything re-indexed it.
        swap_for_link(memory, outside / "feedback_deploy.md")
        after = Selector().run(store.conn, req, directory, "r2").result
        assert after["selected"] == []
        assert not readable(str(memory), directory)
        with pytest.raises(OutsideFolder):
            memory_text(str(memory), directory)  # what the hook and the MCP tool read
        with pytest.raises(OSError):
            memory_text(str(memory), None)  # no folder to keep it inside: no link followed
        # The next pass makes it an error entry, its target named, its text never kept.
        Syncer(store).sync_tree(str(root))
        errors = queries.errors_under(store.conn, str(root))
        assert [e["path"] for e in errors] == [str(memory)]
        assert "outside the root" in errors[0]["error"]
        rows = store.conn.execute("SELECT * FROM files").fetchall()
        assert SECRET not in repr([tuple(r) for r in rows])
    finally:
        store.close()


def test_a_folder_reached_through_a_linked_parent_still_serves_its_files(
    world: tuple[Path, Path], tmp_path: Path
) -> None:
    """A dotfiles setup: ``~/.claude`` is a link; the hook names the folder through it."""
    root, _outside = world
    linked = tmp_path / "dotfiles-link"
    os.symlink(root.parent, linked)
    through_link = linked / root.name
    memory = root / "feedback_deploy.md"
    assert readable(str(through_link / memory.name), str(through_link))
    assert readable(str(memory), str(through_link))  # the daemon answers real paths
    assert "Use make." in memory_text(str(memory), str(through_link))
