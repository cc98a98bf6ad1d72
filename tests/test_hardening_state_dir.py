"""The state directory: memoryd tightens its own, and never changes one the user named."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from daemon_fixtures import DaemonProc

NOBODY = 65534


def _named(make_daemon: Callable[..., DaemonProc], mode: int) -> DaemonProc:
    """A daemon given ``--state-dir`` outside memoryd's own state folder, made ``mode``."""
    d = make_daemon(start=False)
    d.state_dir = d.home / "mine"
    d.state_dir.mkdir()
    d.state_dir.chmod(mode)
    return d


def _refused(d: DaemonProc) -> str:
    out = subprocess.run(d.argv(), env=d.env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 1, out.stderr
    assert "Traceback" not in out.stderr
    return out.stderr


def test_a_named_state_dir_readable_by_others_is_used_as_it_is(
    make_daemon: Callable[..., DaemonProc],
) -> None:
    d = _named(make_daemon, 0o755)
    d.start()
    assert d.call("status")["db"] == str(d.state_dir / "index.db")
    assert d.state_dir.stat().st_mode & 0o777 == 0o755


def test_a_named_state_dir_others_may_write_is_refused_and_left_alone(
    make_daemon: Callable[..., DaemonProc],
) -> None:
    d = _named(make_daemon, 0o775)
    err = _refused(d)
    assert f"refusing to use {d.state_dir}: it is writable by others" in err
    assert f"chmod 700 {d.state_dir}" in err
    assert d.state_dir.stat().st_mode & 0o777 == 0o775
    assert list(d.state_dir.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another uid")
def test_a_named_state_dir_of_another_user_is_refused(
    make_daemon: Callable[..., DaemonProc],
) -> None:
    d = _named(make_daemon, 0o700)
    os.chown(d.state_dir, NOBODY, NOBODY)
    err = _refused(d)
    assert f"refusing to use {d.state_dir}: it belongs to uid {NOBODY}" in err
    assert "a directory of your own" in err
    assert d.state_dir.stat().st_uid == NOBODY


def test_memoryds_own_state_dir_open_to_others_is_tightened(
    make_daemon: Callable[..., DaemonProc],
) -> None:
    d = make_daemon(start=False)  # its --state-dir is $XDG_STATE_HOME/memoryd: the default
    own = Path(d.env["XDG_STATE_HOME"]) / "memoryd"
    assert d.state_dir == own
    own.mkdir(parents=True)
    own.chmod(0o755)
    d.start()
    assert own.stat().st_mode & 0o777 == 0o700
