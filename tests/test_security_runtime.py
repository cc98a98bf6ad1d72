"""Other local users: a planted runtime directory, a fake server on our socket path."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from daemon_fixtures import DaemonProc

from memoryd.errors import UnsafeDaemon
from memoryd.ipc.client import Client

NOBODY = 65534

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another uid")


def test_symlinked_runtime_dir_is_refused_even_when_the_target_is_ours(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    # Another user plants /tmp/memoryd-$UID -> a directory of ours: the target
    # passes an owner check, but the link's owner can re-point it later.
    d = make_daemon(start=False)
    target = tmp_path / "ours"
    target.mkdir(mode=0o700)
    d.socket.parent.parent.mkdir(parents=True, exist_ok=True)
    d.socket.parent.symlink_to(target)
    out = subprocess.run(d.argv(), env=d.env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 1, out.stderr
    assert "is a symbolic link" in out.stderr and "Traceback" not in out.stderr
    assert not (target / "memoryd.sock").exists()


def test_runtime_dir_readable_by_others_is_refused(make_daemon: Callable[..., DaemonProc]) -> None:
    d = make_daemon(start=False)
    d.socket.parent.mkdir(parents=True)
    d.socket.parent.chmod(0o755)
    out = subprocess.run(d.argv(), env=d.env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 1
    assert "open to others (mode 755, expected 700)" in out.stderr


@needs_root
def test_runtime_dir_owned_by_another_user_is_refused(
    make_daemon: Callable[..., DaemonProc],
) -> None:
    d = make_daemon(start=False)
    d.socket.parent.mkdir(mode=0o700, parents=True)
    os.chown(d.socket.parent, NOBODY, NOBODY)
    out = subprocess.run(d.argv(), env=d.env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 1
    assert f"belongs to uid {NOBODY}" in out.stderr


_FAKE_SERVER = """
import os, socket, sys
os.setgid(65534); os.setuid(65534)
srv = socket.socket(socket.AF_UNIX)
srv.bind(sys.argv[1]); srv.listen(1)
print("listening", flush=True)
conn, _ = srv.accept()
conn.settimeout(5)
got = b""
try:
    while True:
        chunk = conn.recv(4096)
        if not chunk:
            break
        got += chunk
except OSError:
    pass
conn.sendall(b'{"id":1,"result":{"state":"ready","fake":true}}\\n') if got else None
print("received", len(got), flush=True)
"""


@needs_root
def test_client_refuses_a_server_running_as_another_uid(world_tmp: Path) -> None:
    sock_path = world_tmp / "memoryd.sock"
    server = subprocess.Popen(
        [sys.executable, "-c", _FAKE_SERVER, str(sock_path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        assert server.stdout.readline().strip() == "listening"
        client = Client(sock_path, timeout=5)
        with pytest.raises(UnsafeDaemon, match=f"runs as uid {NOBODY}, not as us"):
            client.status()
        out, _ = server.communicate(timeout=10)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert out.strip() == "received 0"


def _modes(paths: list[Path]) -> dict[str, str]:
    return {p.name: oct(p.stat().st_mode & 0o777) for p in paths if p.exists()}


def test_memoryd_index_creates_a_private_db_whatever_the_umask(tmp_path: Path) -> None:
    memdir = tmp_path / "memory"
    memdir.mkdir()
    (memdir / "user_role.md").write_text("---\ndescription: a data engineer\n---\nbody\n")
    db = tmp_path / "new" / "state" / "index.db"
    out = subprocess.run(
        [sys.executable, "-m", "memoryd", "index", str(memdir), "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: os.umask(0o022),
    )
    assert out.returncode == 0, out.stderr
    files = [db, Path(f"{db}-wal"), Path(f"{db}-shm")]
    assert set(_modes(files).values()) == {"0o600"}
    assert _modes([db.parent, db.parent.parent]) == {"state": "0o700", "new": "0o700"}


def test_daemon_state_and_reports_are_private_whatever_the_umask(
    make_daemon: Callable[..., DaemonProc],
) -> None:
    d = make_daemon(start=False)
    d.start(preexec_fn=lambda: os.umask(0o022))
    d.call("report", {})
    created = [p for p in d.state_dir.rglob("*") if p.is_file()]
    assert {p.name for p in created} >= {"index.db", "memoryd.pid"}
    assert any(p.parent.name == "reports" for p in created)
    assert set(_modes(created).values()) == {"0o600"}
    dirs = [d.state_dir, *(p for p in d.state_dir.rglob("*") if p.is_dir())]
    assert set(_modes(dirs).values()) == {"0o700"}
