"""Idle connections cannot lock clients out: at the cap or out of descriptors, the one
silent longest makes room for the new client.

Before: 300 idle clients against a 256-descriptor limit (or simply
``max_connections`` idle ones) got every new client, the hook's included, a
``busy`` answer until ``idle_timeout`` closed them a minute later. Now the
connection that has waited longest for a request is closed for the newcomer,
and a connection's thread gives back its database connection as it ends.
"""

from __future__ import annotations

import contextlib
import json
import resource
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog
from daemon_fixtures import DaemonProc, scaled, wait_until, write_memory

from memoryd.config import Config
from memoryd.ipc.client import Client
from memoryd.ipc.server import Server

RELEASE = threading.Event()
ENTERED: list[int] = []


def _slow(params: dict[str, Any]) -> str:
    ENTERED.append(1)
    RELEASE.wait(30)
    return "slow"


@pytest.fixture
def server() -> Iterator[tuple[Path, Server]]:
    structlog.reset_defaults()
    run_dir = Path(tempfile.mkdtemp(prefix="srv-", dir="/tmp"))
    path = run_dir / "s.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(64)
    srv = Server(listener, Config(max_connections=2), evict_after=0.05)
    srv.start({"ping": lambda p: "pong", "slow": _slow})
    yield path, srv
    RELEASE.set()
    srv.stop(timeout=2)
    path.unlink(missing_ok=True)
    run_dir.rmdir()


def test_at_the_cap_the_longest_idle_connection_makes_room(server: tuple[Path, Server]) -> None:
    path, _srv = server
    idle = [socket.socket(socket.AF_UNIX) for _ in range(2)]
    for sock in idle:
        sock.connect(str(path))
        sock.settimeout(10)
        time.sleep(0.1)  # each silent for longer than evict_after, the first the longest
    with Client(path, timeout=10) as c:
        assert c.call("ping") == "pong"
    assert idle[0].recv(1) == b""  # closed to make room
    for sock in idle:
        sock.close()


def test_a_connection_that_is_not_idle_is_never_closed_for_another(
    server: tuple[Path, Server],
) -> None:
    path, _srv = server
    RELEASE.clear()
    ENTERED.clear()
    answers: list[str] = []
    with Client(path, timeout=30) as a, Client(path, timeout=30) as b:
        waiting = [
            threading.Thread(target=lambda c=c: answers.append(c.call("slow"))) for c in (a, b)
        ]
        for thread in waiting:
            thread.start()
        wait_until(lambda: len(ENTERED) == 2, 10, "both requests in flight")
        time.sleep(0.1)  # longer than evict_after: only a request in flight keeps them
        with socket.socket(socket.AF_UNIX) as c:  # answered busy without being asked
            c.settimeout(10)
            c.connect(str(path))
            assert json.loads(c.makefile("rb").readline())["error"]["code"] == "busy"
        RELEASE.set()
        for thread in waiting:
            thread.join(10)
    assert answers == ["slow", "slow"]


def _low_fd_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))


def _ask(d: DaemonProc, method: str, params: dict[str, Any]) -> str:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(30)
        sock.connect(str(d.socket))
        with contextlib.suppress(OSError):  # refused before it was read
            sock.sendall(json.dumps({"id": 1, "method": method, "params": params}).encode() + b"\n")
        answer = json.loads(sock.makefile("rb").readline())
    return "ok" if "result" in answer else str(answer["error"]["code"])


def test_300_idle_clients_at_256_descriptors_do_not_lock_out_a_new_one(
    make_daemon: Callable[..., DaemonProc],
) -> None:
    d = make_daemon(start=False)
    write_memory(d.roots[0] / "feedback_lint.md", "always run the linter before committing")
    d.start(preexec_fn=_low_fd_limit)
    listing = {"dir": str(d.roots[0])}
    held: list[socket.socket] = []
    try:
        for _ in range(300):  # each reads the index once (a connection of its own), then idles
            sock = socket.socket(socket.AF_UNIX)
            sock.settimeout(10)
            sock.connect(str(d.socket))
            with contextlib.suppress(OSError):  # a refused one may be closed already
                sock.sendall(json.dumps({"id": 1, "method": "list", "params": listing}).encode())
                sock.sendall(b"\n")
                sock.makefile("rb").readline()
            held.append(sock)
        assert "ipc.out_of_descriptors" in d.log()
        wait_until(
            lambda: _ask(d, "list", listing) == "ok", scaled(10), "a new client served beside them"
        )
    finally:
        for sock in held:
            sock.close()
    wait_until(lambda: _ask(d, "list", listing) == "ok", scaled(10), "served after they close")
