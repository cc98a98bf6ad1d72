"""Bad input on the socket gets a specific error; other clients never notice."""

from __future__ import annotations

import json
import socket
import threading
import typing
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from daemon_fixtures import DaemonProc, write_memory

from memoryd import methods
from memoryd.errors import InvalidParams, UnknownMethod


@contextmanager
def raw(daemon: DaemonProc) -> Iterator[tuple[socket.socket, Any]]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(10)
    sock.connect(str(daemon.socket))
    with sock, sock.makefile("rb") as reader:
        yield sock, reader


def exchange(sock: socket.socket, reader: Any, line: bytes) -> dict[str, Any]:
    sock.sendall(line)
    reply: dict[str, Any] = json.loads(reader.readline())
    return reply


@pytest.mark.parametrize(
    ("line", "code", "fragment"),
    [
        (b"{not json\n", "parse_error", "not valid JSON"),
        (b"\xff\xfe\n", "parse_error", "not valid JSON"),
        (b"[1, 2]\n", "invalid_request", "must be a JSON object"),
        (b'{"id": 1}\n', "invalid_request", "'method' must be a non-empty string"),
        (b'{"id": 2, "method": "status", "params": [1]}\n', "invalid_request", "'params'"),
        (b'{"id": 3, "method": "status", "extra": 1}\n', "invalid_request", "unknown request keys"),
        (b'{"id": true, "method": "status"}\n', "invalid_request", "'id'"),
        (b'{"id": 4, "method": "frobnicate"}\n', "unknown_method", "'frobnicate'"),
        (b'{"id": 5, "method": "list", "params": {"dir": 7}}\n', "invalid_params", "'dir'"),
        (
            b'{"id": 6, "method": "list", "params": {"dir": "/nope/x"}}\n',
            "invalid_params",
            "not found",
        ),
        (
            b'{"id": 7, "method": "status", "params": {"verbose": 1}}\n',
            "invalid_params",
            "unknown parameter(s): verbose",
        ),
    ],
)
def test_bad_requests_get_specific_errors_and_the_connection_survives(
    daemon: DaemonProc, line: bytes, code: str, fragment: str
) -> None:
    with raw(daemon) as (sock, reader):
        reply = exchange(sock, reader, line)
        assert reply["error"]["code"] == code
        assert fragment in reply["error"]["message"]
        ok = exchange(sock, reader, b'{"id": 99, "method": "status"}\n')
        assert ok["id"] == 99 and ok["result"]["state"] == "ready"


def test_ids_are_echoed_for_errors_when_known(daemon: DaemonProc) -> None:
    with raw(daemon) as (sock, reader):
        reply = exchange(sock, reader, b'{"id": "abc", "method": "nope"}\n')
        assert reply["id"] == "abc"
        reply = exchange(sock, reader, b'{"id": "m", "params": {}}\n')
        assert reply["id"] == "m"


def test_oversized_line_is_refused_without_hurting_others(daemon: DaemonProc) -> None:
    with raw(daemon) as (other, other_reader), raw(daemon) as (sock, reader):
        sock.sendall(b'{"id": 1, "method": "status", "params": {"x": "' + b"a" * (3 << 20))
        reply = json.loads(reader.readline())
        assert reply["error"]["code"] == "invalid_request"
        assert "exceeds 1,048,576 bytes" in reply["error"]["message"]
        assert exchange(other, other_reader, b'{"id": 1, "method": "status"}\n')["result"]
        # The rest of the long line is dropped; the connection then works again.
        sock.sendall(b"a" * (2 << 20) + b'"}}\n')
        assert exchange(sock, reader, b'{"id": 2, "method": "status"}\n')["id"] == 2


def test_client_vanishing_mid_request_does_not_disturb_the_daemon(daemon: DaemonProc) -> None:
    root = str(daemon.roots[0])
    for _ in range(20):
        with raw(daemon) as (sock, _reader):
            sock.sendall(b'{"id": 1, "method": "sta')
        with raw(daemon) as (sock, _reader):
            # Gone before the answer is written.
            sock.sendall(b'{"id": 1, "method": "list", "params": {"dir": "%s"}}\n' % root.encode())
    assert daemon.call("status")["state"] == "ready"


def test_a_silent_client_never_blocks_others(daemon: DaemonProc) -> None:
    with raw(daemon) as (idle, _), raw(daemon) as (half, _):
        half.sendall(b'{"id": 1, "method": "status"')  # never finished
        for _ in range(20):
            assert daemon.call("status")["state"] == "ready"
        del idle


def test_concurrent_clients_all_get_their_own_answers(daemon: DaemonProc) -> None:
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            with daemon.client() as c:
                for i in range(40):
                    result = c.call("status")
                    assert result["pid"] == daemon.proc.pid  # type: ignore[union-attr]
                    if i % 10 == n % 10:
                        with pytest.raises(UnknownMethod):
                            c.call("nope")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []


def test_the_daemon_answers_the_defined_methods_and_announces_their_capabilities(
    daemon: DaemonProc,
) -> None:
    with daemon.client() as c:
        assert c.status()["capabilities"] == methods.capabilities()
        with pytest.raises(UnknownMethod) as info:
            c.call("frobnicate")
    assert info.value.data == {"methods": sorted(methods.METHODS)}


def test_every_reply_has_the_keys_of_its_reply_type(daemon: DaemonProc) -> None:
    root = str(daemon.roots[0])
    write_memory(daemon.roots[0] / "feedback_ledger.md", "The ledger posts nightly")
    extra = daemon.roots[0].parent / "notes"
    write_memory(extra / "feedback_notes.md", "Notes on the notes")
    with daemon.client() as c:
        replies = {
            "reindex": c.call("reindex", {"dir": root}),
            "list": c.list(root),
            "select": c.select("when does the ledger post", root),
            "stats": c.call("stats"),
            "save": c.save(root, "ledger", session_summary="Wired the ledger"),
            "load_last": c.load_last(root, "ledger"),
            "context": c.context("the ledger", root),
            "report": c.call("report", {"dir": root}),
            "check": c.call("check", {"dir": root}),
            "watch": c.watch(str(extra)),
            "unwatch": c.call("unwatch", {"dir": str(extra)}),
            "status": c.status(),
            "shutdown": c.call("shutdown"),
        }
    assert set(replies) == set(methods.METHODS)
    for name, reply in replies.items():
        hints = typing.get_type_hints(methods.METHODS[name].reply, include_extras=True)
        always = {k for k, v in hints.items() if typing.get_origin(v) is not typing.NotRequired}
        assert always <= set(reply) <= set(hints), (name, set(reply) ^ set(hints))


def test_client_raises_typed_errors_with_data(daemon: DaemonProc) -> None:
    with daemon.client() as c, pytest.raises(InvalidParams) as info:
        c.call("list", {"dir": 12})
    assert info.value.code == "invalid_params"
    assert info.value.data == {"field": "dir"}


def test_too_broad_directories_are_not_added_as_roots(daemon: DaemonProc) -> None:
    with daemon.client() as c, pytest.raises(InvalidParams, match="too broad"):
        c.call("list", {"dir": "/"})
    assert [r["path"] for r in daemon.call("status")["roots"]] == [str(daemon.roots[0])]
