"""Which socket a client uses, and that it says why: MCP clients scrub the environment.

The official MCP SDK starts a stdio server with only HOME, PATH, SHELL, TERM,
USER and LOGNAME, so ``memoryd mcp`` loses ``XDG_RUNTIME_DIR``; it must still
find the daemon systemd started under ``/run/user/$UID``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_fixtures import DaemonProc

from memoryd import paths
from memoryd.errors import DaemonUnavailable
from memoryd.ipc.client import Client


@pytest.fixture
def run_user(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A stand-in for /run/user; the environment cleared of every socket hint.

    A short folder of its own in /tmp: socket paths below it must fit AF_UNIX's 107 bytes.
    """
    base = Path(tempfile.mkdtemp(prefix="md-ru-", dir="/tmp"))
    monkeypatch.setattr(paths, "RUN_USER", base)
    monkeypatch.delenv("MEMORYD_SOCKET", raising=False)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def test_the_rules_in_order(run_user: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    uid = os.getuid()
    fallback = paths.socket_choice()
    assert fallback.path == Path(f"/tmp/memoryd-{uid}/memoryd.sock")
    assert (
        fallback.reason
        == f"$XDG_RUNTIME_DIR is unset and there is no {run_user / str(uid)} of ours"
    )
    (run_user / str(uid)).mkdir(mode=0o700)
    systemd = paths.socket_choice()
    assert systemd.path == run_user / str(uid) / "memoryd" / "memoryd.sock"
    assert "exists and is ours" in systemd.reason
    monkeypatch.setenv("XDG_RUNTIME_DIR", "relative/is/ignored")
    assert paths.socket_choice() == systemd
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/elsewhere")
    assert paths.socket_choice() == (
        Path("/run/elsewhere/memoryd/memoryd.sock"),
        "$XDG_RUNTIME_DIR",
    )
    monkeypatch.setenv("MEMORYD_SOCKET", "/tmp/x.sock")
    assert paths.socket_choice() == (Path("/tmp/x.sock"), "$MEMORYD_SOCKET")
    assert paths.default_socket() == Path("/tmp/x.sock")


def test_a_run_user_dir_that_is_a_symlink_or_not_ours_is_not_used(
    run_user: Path, tmp_path: Path
) -> None:
    uid = os.getuid()
    target = tmp_path / "elsewhere"
    target.mkdir()
    (run_user / str(uid)).symlink_to(target)
    assert paths.socket_choice().path == Path(f"/tmp/memoryd-{uid}/memoryd.sock")
    if os.geteuid() == 0:
        (run_user / str(uid)).unlink()
        (run_user / str(uid)).mkdir()
        os.chown(run_user / str(uid), 65534, 65534)
        assert paths.socket_choice().path == Path(f"/tmp/memoryd-{uid}/memoryd.sock")


@pytest.fixture
def listening(tmp_path: Path) -> Iterator[Path]:
    path = Path("/tmp") / f"md-other-{os.getpid()}.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    yield path
    server.close()
    path.unlink()


def test_no_daemon_names_the_rule_and_a_socket_that_exists_elsewhere(
    run_user: Path, listening: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uid = os.getuid()
    (run_user / str(uid) / "memoryd").mkdir(parents=True)
    elsewhere = run_user / str(uid) / "memoryd" / "memoryd.sock"
    os.symlink(listening, elsewhere)  # stands for a socket there; lstat sees a link, not a socket
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run_user / "nobody"))
    with pytest.raises(DaemonUnavailable) as exc:
        Client(timeout=1).connect()
    assert "socket chosen by $XDG_RUNTIME_DIR" in str(exc.value)
    assert str(elsewhere) not in str(exc.value)
    elsewhere.unlink()
    os.link(listening, elsewhere)  # a hard link is the socket itself
    with pytest.raises(DaemonUnavailable) as exc:
        Client(timeout=1).connect()
    assert f"a socket exists at {elsewhere} (set MEMORYD_SOCKET to use it)" in str(exc.value)


def test_status_says_which_socket_and_why_and_which_claude_code_folder(
    daemon: DaemonProc, tmp_path: Path
) -> None:
    env = {**daemon.env, "MEMORYD_SOCKET": str(daemon.socket)}
    cli = [sys.executable, "-m", "memoryd", "status"]
    human = subprocess.run(cli, env=env, capture_output=True, text=True, cwd=tmp_path).stdout
    assert f"socket:  {daemon.socket} (chosen by $MEMORYD_SOCKET)" in human
    assert f"Claude Code memory for {tmp_path}: " in human
    assert "does not exist yet; named after" in human
    out = subprocess.run([*cli, "--json"], env=env, capture_output=True, text=True, cwd=tmp_path)
    status = json.loads(out.stdout)
    assert status["client_socket"] == {"path": str(daemon.socket), "reason": "$MEMORYD_SOCKET"}
    folder = status["claude_code_folder"]
    assert (folder["cwd"], folder["exists"], folder["watched"]) == (str(tmp_path), False, False)
