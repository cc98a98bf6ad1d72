"""A crowd of clients, a thread limit, a descriptor limit: the daemon keeps answering.

What used to happen: a failed thread start killed the accept thread for good
(the process stayed up, answering nothing, so systemd never restarted it), and
1,100 idle connections under a 1,024-descriptor limit made the daemon
unreachable while its accept loop spun. Now connections beyond what it can
serve get a ``busy`` error line, idle ones are closed, and a fatal failure of
the accept loop exits non-zero.
"""

from __future__ import annotations

import contextlib
import json
import resource
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog
from daemon_fixtures import DaemonProc, scaled, wait_until

from memoryd.config import Config
from memoryd.errors import Busy
from memoryd.ipc.client import Client
from memoryd.ipc.server import Server


@pytest.fixture
def serve() -> Iterator[Callable[..., tuple[Path, Server]]]:
    """Start an in-process server on a real socket: ``serve(handlers, **Server options)``."""
    structlog.reset_defaults()  # not a stream a CLI test in this process closed since
    made: list[tuple[Path, Server]] = []
    run_dir = Path(tempfile.mkdtemp(prefix="srv-", dir="/tmp"))

    def start(handlers: dict[str, Any] | None = None, **options: Any) -> tuple[Path, Server]:
        path = run_dir / f"{len(made)}.sock"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(path))
        listener.listen(64)
        handlers = handlers or {"ping": lambda p: "pong"}
        limits = {k: options.pop(k) for k in ("max_connections", "idle_timeout") if k in options}
        srv = Server(listener, Config(**limits), **options)
        srv.start(handlers)
        made.append((path, srv))
        return path, srv

    yield start
    for path, srv in made:
        srv.stop(timeout=2)
        path.unlink(missing_ok=True)
    run_dir.rmdir()


def first_line(path: Path) -> dict[str, Any]:
    """Connect and read what the server says without being asked (a refusal)."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(10)
        sock.connect(str(path))
        answer: dict[str, Any] = json.loads(sock.makefile("rb").readline())
        return answer


def test_a_failed_thread_start_is_answered_busy_and_the_server_goes_on(
    serve: Callable[..., tuple[Path, Server]], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, srv = serve()
    real_start = threading.Thread.start

    def no_threads(self: threading.Thread) -> None:
        if self.name == "ipc-client":
            raise RuntimeError("can't start new thread")
        real_start(self)

    monkeypatch.setattr(threading.Thread, "start", no_threads)
    answer = first_line(path)
    assert answer["error"]["code"] == "busy"
    assert "no thread could be started" in answer["error"]["message"]
    monkeypatch.undo()
    with Client(path, timeout=10) as c:  # the accept loop survived
        assert c.call("ping") == "pong"
    assert srv.refused == 1


def test_connections_over_the_cap_are_busy_and_idle_ones_are_closed(
    serve: Callable[..., tuple[Path, Server]],
) -> None:
    path, _srv = serve(max_connections=2, idle_timeout=scaled(1.0), evict_after=scaled(60))
    idle = [socket.socket(socket.AF_UNIX) for _ in range(2)]
    for sock in idle:
        sock.connect(str(path))
    with Client(path, timeout=10) as c, pytest.raises(Busy, match="2 connections are open"):
        c.call("ping")
    for sock in idle:  # the server closes them once they have been silent a while
        sock.settimeout(scaled(10))
        assert sock.recv(1) == b""
        sock.close()
    with Client(path, timeout=10) as c:
        assert c.call("ping") == "pong"


def test_a_slow_request_holds_up_only_its_own_connection(
    serve: Callable[..., tuple[Path, Server]],
) -> None:
    release = threading.Event()

    def slow(params: dict[str, object]) -> str:
        release.wait(30)
        return "slow"

    path, _srv = serve({"slow": slow, "fast": lambda p: "fast"})
    answers: list[str] = []
    try:
        with Client(path, timeout=30) as c:
            waiting = threading.Thread(target=lambda: answers.append(c.call("slow")))
            waiting.start()
            with Client(path, timeout=30) as other:
                for _ in range(3):
                    assert other.call("fast") == "fast"
            assert answers == []
            release.set()
            waiting.join(10)
    finally:
        release.set()
    assert answers == ["slow"]


def test_the_accept_loop_failing_is_reported_as_fatal(
    serve: Callable[..., tuple[Path, Server]], monkeypatch: pytest.MonkeyPatch
) -> None:
    reasons: list[str] = []

    def broken(self: Server, sock: socket.socket) -> None:
        raise SystemError("a bug in the accept path")

    monkeypatch.setattr(Server, "_admit", broken)
    path, srv = serve(on_fatal=reasons.append)
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(str(path))
    srv._thread.join(10)  # type: ignore[union-attr]
    assert reasons and "a bug in the accept path" in reasons[0]


def _low_fd_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (96, 96))


def test_a_daemon_out_of_descriptors_answers_busy_and_recovers(
    make_daemon: Callable[..., DaemonProc],
) -> None:
    d = make_daemon(start=False)
    d.start(preexec_fn=_low_fd_limit)  # fewer descriptors than the 128 connections allowed
    held: list[socket.socket] = []
    codes: list[str] = []
    try:
        for _ in range(120):  # more than the 96 descriptors the daemon may hold
            sock = socket.socket(socket.AF_UNIX)
            sock.settimeout(10)
            sock.connect(str(d.socket))
            with contextlib.suppress(OSError):  # a refused one may be closed already
                sock.sendall(b'{"id":1,"method":"status"}\n')
            answer = json.loads(sock.makefile("rb").readline())
            codes.append("ok" if "result" in answer else answer["error"]["code"])
            held.append(sock)
    finally:
        for sock in held:
            sock.close()
    assert codes[0] == "ok" and codes[-1] == "busy" and set(codes) == {"ok", "busy"}
    assert "ipc.out_of_descriptors" in d.log()
    # The held connections are closed; once their threads see it the daemon has
    # descriptors again and serves as before (under load that takes a moment).
    answers: list[dict[str, Any]] = []

    def served() -> bool:
        with contextlib.suppress(Busy):
            answers.append(d.call("status"))
        return bool(answers)

    wait_until(served, scaled(10), "a status answer once descriptors are free")
    assert answers[0]["connections_refused"] >= codes.count("busy")


INJECTED = """
import sys
from memoryd.ipc.server import Server
def broken(self, sock):
    raise SystemError("injected: the accept path is broken")
Server._admit = broken
from memoryd.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_daemon_whose_accept_loop_dies_exits_non_zero(
    make_daemon: Callable[..., DaemonProc],
) -> None:
    """Before: the process stayed up answering nothing, so systemd never restarted it."""
    d = make_daemon(start=False)
    argv = [sys.executable, "-c", INJECTED, *d.argv()[3:]]
    d.start(wait=False, argv=argv)
    deadline = scaled(20)
    with socket.socket(socket.AF_UNIX) as probe:
        for _ in range(int(deadline * 20)):
            try:
                probe.connect(str(d.socket))
                break
            except OSError:
                threading.Event().wait(0.05)
    assert d.proc is not None
    try:
        code = d.proc.wait(deadline)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the daemon kept running:\n{d.log()}") from None
    assert code == 70, d.log()
    assert "daemon.fatal" in d.log()
    d.log_path.write_text("")  # the injected traceback is expected
