"""The client tells "no daemon" from "sent, but no (valid) answer", and the CLI acts on it.

Starting a daemon and asking again is only safe when the daemon cannot have
seen the request; otherwise a save could be written twice or a selection
recorded twice. The peers here are real: a daemon process frozen with SIGSTOP, and a
scripted Unix-socket peer for answers a healthy daemon never gives.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest
from daemon_fixtures import DaemonProc
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import TextContent

from memoryd.errors import (
    DaemonTimeout,
    DaemonUnavailable,
    InvalidRequest,
    NoReply,
    ProtocolError,
)
from memoryd.ipc.client import Client


@pytest.fixture
def sock_path() -> Iterator[Path]:
    """A socket path short enough for AF_UNIX (pytest's tmp_path can be too long)."""
    folder = Path(tempfile.mkdtemp(prefix="md-peer-", dir="/tmp"))
    yield folder / "peer.sock"
    shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def scripted_peer(path: Path, answer: bytes | None) -> Iterator[list[bytes]]:
    """Accept one connection, read one request line, send ``answer`` (None: hang up)."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen()
    received: list[bytes] = []

    def serve() -> None:
        conn, _ = server.accept()
        with conn, conn.makefile("rb") as reader:
            received.append(reader.readline())
            if answer is not None:
                conn.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield received
    finally:
        thread.join(timeout=30)
        server.close()


def test_a_frozen_daemon_is_a_timeout_not_an_absent_daemon(daemon: DaemonProc) -> None:
    assert daemon.proc is not None
    client = Client(daemon.socket, timeout=0.5)
    os.kill(daemon.proc.pid, signal.SIGSTOP)
    try:
        with pytest.raises(NoReply) as info:
            client.status()
    finally:
        os.kill(daemon.proc.pid, signal.SIGCONT)
    assert isinstance(info.value, DaemonTimeout)
    assert not isinstance(info.value, DaemonUnavailable)
    assert str(info.value) == "the daemon did not answer within 0.5 s"
    # The late answer to the first request went to a closed connection: the
    # next call gets its own answer on a fresh one.
    client.timeout = 10
    with client:
        assert client.status()["pid"] == daemon.proc.pid


def test_no_socket_is_unavailable(sock_path: Path) -> None:
    with pytest.raises(DaemonUnavailable, match="no memoryd daemon answers"):
        Client(sock_path, timeout=1).connect()


@pytest.mark.parametrize(
    ("answer", "error", "message"),
    [
        (b'{"id": 99, "result": {}}\n', ProtocolError, "answered request 99 instead of 1"),
        (b'{"id": 99, "error": {"code": "internal", "message": "x"}}\n', ProtocolError, "99"),
        (b"this is not json\n", ProtocolError, "not valid JSON"),
        (b"[1, 2]\n", ProtocolError, "not a reply object"),
        (b'{"id": 1, "error": "boom"}\n', ProtocolError, "error answer is not an object"),
        (b"", NoReply, "closed the connection without answering"),
    ],
)
def test_answers_that_do_not_fit_the_request(
    sock_path: Path, answer: bytes, error: type[Exception], message: str
) -> None:
    with scripted_peer(sock_path, answer) as received, Client(sock_path, timeout=10) as client:
        with pytest.raises(error, match=message) as info:
            client.status()
        assert not isinstance(info.value, DaemonUnavailable | InvalidRequest)
    assert json.loads(received[0])["method"] == "status"


def test_an_error_without_an_id_is_still_the_daemons_error(sock_path: Path) -> None:
    """The daemon answers with a null id when it could not read the request's id."""
    refusal = b'{"id": null, "error": {"code": "invalid_request", "message": "too long"}}\n'
    with (
        scripted_peer(sock_path, refusal),
        Client(sock_path, timeout=10) as client,
        pytest.raises(InvalidRequest, match="too long"),
    ):
        client.status()


def test_cli_save_does_not_redo_the_work_when_the_request_was_sent(
    sock_path: Path, tmp_path: Path
) -> None:
    memory = tmp_path / "memory"
    memory.mkdir()
    env = {**os.environ, "MEMORYD_DB": str(tmp_path / "index.db")}
    cli = [sys.executable, "-m", "memoryd", "save", "--dir", str(memory), "--project", "demo"]
    cli += ["--summary", "Wired the ledger.", "--socket", str(sock_path)]
    with scripted_peer(sock_path, None) as received:
        done = subprocess.run(cli, env=env, capture_output=True, text=True, timeout=60)
    assert json.loads(received[0])["method"] == "save"
    assert done.returncode == 1
    assert (
        done.stderr.strip() == "memoryd: error: the daemon closed the connection without answering"
    )
    assert list(memory.iterdir()) == []  # the request is not sent twice


def test_mcp_tool_says_the_request_was_sent_but_not_answered(sock_path: Path) -> None:
    """The MCP server must not tell the agent "the daemon is not running" after sending."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memoryd", "mcp"],
        env={**os.environ, "MEMORYD_SOCKET": str(sock_path)},
    )
    texts: list[str] = []

    async def main() -> None:
        async with (
            stdio_client(params, errlog=sys.stderr) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool("memory_status", {})
            assert result.is_error
            texts.extend(c.text for c in result.content if isinstance(c, TextContent))

    with scripted_peer(sock_path, None) as received:
        anyio.run(main)
    assert json.loads(received[0])["method"] == "status"
    text = "".join(texts)
    assert "closed the connection without answering" in text
    assert "not running" not in text
