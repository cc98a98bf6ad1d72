"""Private folders are made one way: the daemon's runtime folder like the index's."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from memoryd.daemon.runtime import ensure_private_dir
from memoryd.errors import UnsafeRuntimeDir


def test_a_runtime_dirs_missing_parents_are_made_private_whatever_the_umask(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "a" / "b" / "run"
    old = os.umask(0o022)
    try:
        ensure_private_dir(folder)
    finally:
        os.umask(old)
    for made in (tmp_path / "a", tmp_path / "a" / "b", folder):
        assert stat.S_IMODE(made.stat().st_mode) == 0o700, made


def test_a_dangling_symlink_in_place_of_the_runtime_dir_is_refused_as_a_link(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "run"
    folder.symlink_to(tmp_path / "nowhere")
    with pytest.raises(UnsafeRuntimeDir, match="is a symbolic link"):
        ensure_private_dir(folder)
    assert not (tmp_path / "nowhere").exists()
