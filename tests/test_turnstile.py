"""The request turnstile: one at a time, first come first served, bounded patience."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import pytest

from memoryd.ipc.client import Client
from memoryd.ipc.server import Server
from memoryd.ipc.turnstile import Turnstile


def _wait_for(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition never held"
        time.sleep(0.005)


def _waiting(gate: Turnstile, count: int) -> bool:
    return gate.waiting == count


def test_waiters_get_the_turn_in_arrival_order() -> None:
    gate = Turnstile(patience=30.0)
    assert gate.enter()
    order: list[int] = []

    def visitor(n: int) -> None:
        assert gate.enter()
        order.append(n)
        gate.leave()

    threads = []
    for n in range(5):
        t = threading.Thread(target=visitor, args=(n,))
        t.start()
        threads.append(t)
        _wait_for(partial(_waiting, gate, n + 1))
    assert order == []  # nobody got in while the turn was held
    gate.leave()
    for t in threads:
        t.join(10)
    assert order == [0, 1, 2, 3, 4]
    assert gate.enter()  # free again once everyone left
    gate.leave()


def test_a_waiter_runs_without_the_turn_after_its_patience() -> None:
    gate = Turnstile(patience=0.05)
    assert gate.enter()
    assert gate.enter() is False  # gave up waiting; the holder still has the turn
    assert gate.waiting == 0
    gate.leave()
    assert gate.enter()  # the turn was freed, not lost to the one that gave up
    gate.leave()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[Path, threading.Event]]:
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"turnstile-{os.getpid()}-{id(tmp_path)}.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen()
    release = threading.Event()

    def slow(params: dict[str, object]) -> str:
        release.wait(30)
        return "slow"

    srv = Server(listener, {"slow": slow, "fast": lambda p: "fast"}, allowed_uid=os.getuid())
    srv.start()
    try:
        yield path, release
    finally:
        release.set()
        srv.stop()
        path.unlink(missing_ok=True)


def test_a_slow_request_delays_others_by_at_most_the_patience(
    server: tuple[Path, threading.Event],
) -> None:
    path, release = server
    answers: list[str] = []
    with Client(path, timeout=30) as c:
        slow = threading.Thread(target=lambda: answers.append(c.call("slow")))
        slow.start()
        with Client(path, timeout=30) as other:
            # The slow request holds the turn (or is about to): the fast one
            # still gets its answer while the slow one is blocked.
            for _ in range(3):
                assert other.call("fast") == "fast"
        assert answers == []
        release.set()
        slow.join(10)
    assert answers == ["slow"]
