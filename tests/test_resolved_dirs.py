"""The daemon's cached directory resolution never answers with a path that no longer holds.

Each case resolves once (filling the cache), changes the file system, and
resolves again at once, well inside the cache's time limit.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memoryd import requests
from memoryd.errors import InvalidParams


def test_plain_and_linked_folders_resolve_as_the_uncached_function_does(tmp_path: Path) -> None:
    real = tmp_path / "memory"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    resolved = requests.ResolvedDirs()
    for raw in (str(real), str(tmp_path / "link"), str(tmp_path / "link") + "/"):
        assert resolved.directory(raw) == requests.directory(raw) == str(real)
        assert resolved.directory(raw) == str(real)  # second time from the cache


def test_a_repointed_link_is_followed_at_once(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    link = tmp_path / "link"
    link.symlink_to(first)
    resolved = requests.ResolvedDirs()
    assert resolved.directory(str(link)) == str(first)
    link.unlink()
    link.symlink_to(second)
    assert resolved.directory(str(link)) == str(second)


def test_a_link_repointed_at_the_root_is_seen_so_the_daemon_can_refuse_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "memory").mkdir()
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "memory")
    resolved = requests.ResolvedDirs()
    resolved.directory(str(link))
    link.unlink()
    link.symlink_to("/")
    assert resolved.directory(str(link)) == "/"


def test_a_removed_folder_is_not_found_at_once(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    resolved = requests.ResolvedDirs()
    resolved.directory(str(folder))
    folder.rmdir()
    with pytest.raises(InvalidParams, match="memory directory not found"):
        resolved.directory(str(folder))
    folder.write_text("now a file")
    with pytest.raises(InvalidParams, match="not a directory"):
        resolved.directory(str(folder))


def test_a_folder_moved_away_and_linked_back_resolves_to_its_new_place(tmp_path: Path) -> None:
    # The same directory (same inode) behind the same name: only the lstat of
    # the cached path shows that the name is now a link.
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    resolved = requests.ResolvedDirs()
    assert resolved.directory(str(old)) == str(old)
    os.rename(old, new)
    old.symlink_to(new)
    assert resolved.directory(str(old)) == str(new)


def test_bad_params_are_refused_as_by_the_uncached_function(tmp_path: Path) -> None:
    resolved = requests.ResolvedDirs()
    with pytest.raises(InvalidParams, match="NUL byte"):
        resolved.directory(str(tmp_path) + "\x00x")
