"""The daemon's start-up walks each root once; what the watcher dropped stays dropped."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from daemon_fixtures import composed, write_memory

from memoryd.config import Config
from memoryd.daemon import lifecycle, maintenance, pruned_watch
from memoryd.indexer import scanner, sync


def _cfg(tmp_path: Path, *roots: Path) -> Config:
    return Config(
        socket=tmp_path / "s.sock",
        state_dir=tmp_path / "state",
        db=tmp_path / "index.db",
        roots=tuple(str(r) for r in roots),
    )


def test_the_first_index_walks_each_root_once_and_clears_stale_temp_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    for root in (first, second):
        for i in range(3):
            write_memory(root / f"d{i}" / f"feedback_{i}.md", f"memory {i}")
    # A temp file of a writer killed mid-save (its pid runs no more).
    stale = first / "d0" / ".feedback_0.md.999999999.abcdefgh.tmp"
    stale.write_text("half a save")
    walks: list[str] = []
    real_walk = scanner.walk_dirs

    def walk(root: str, **options: Any) -> Any:
        walks.append(root)
        return real_walk(root, **options)

    for module in (sync, maintenance, lifecycle):  # every module that may walk a root
        monkeypatch.setattr(module, "walk_dirs", walk, raising=False)
    with composed(_cfg(tmp_path, first, second)) as parts:
        parts.roots.restore([(str(first), "configured"), (str(second), "configured")])
        result = parts.maintenance.reconcile("startup")
        progress = parts.maintenance.indexing
    assert (walks.count(str(first)), walks.count(str(second))) == (1, 1)
    assert result.added == 6
    assert progress is not None and (progress.done, progress.total) == (6, 6)
    assert not stale.exists()


def test_a_root_unwatched_meanwhile_is_not_watched_again(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    write_memory(root / "feedback_a.md", "a memory")
    with composed(_cfg(tmp_path, root)) as parts:
        parts.roots.add(str(root), "configured")
        # A check that found the root dead or replaced, then an `unwatch` before its restart.
        parts.watcher.remove_root(str(root))
        assert parts.watcher.restart(str(root)) is None
        assert parts.watcher.mode_of(str(root)) == (None, None)
        assert str(root) not in parts.watcher.replaced_roots()
        os.rename(root, tmp_path / "moved")
        parts.maintenance.check_observers()
        assert parts.watcher.mode_of(str(root)) == (None, None)


def test_a_root_is_walked_once_to_be_watched_and_its_watches_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "memory"
    for name in ("a", "b", "b/c"):
        (root / name).mkdir(parents=True)
    walks: list[str] = []
    real = pruned_watch.kept_subdirectories

    def walk(top: str, **options: Any) -> Any:
        walks.append(top)
        return real(top, **options)

    monkeypatch.setattr(pruned_watch, "kept_subdirectories", walk)
    with composed(_cfg(tmp_path, root)) as parts:
        assert parts.watcher.add_root(str(root)) == "inotify"
        taken = parts.watcher._dirs[str(root)]
    assert walks == [str(root)]
    assert taken == 4  # the root and its three directories
