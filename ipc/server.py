"""A threaded Unix-socket server for the line protocol.

One thread accepts; each connection gets its own thread, so a slow or
vanished client only ever blocks itself. Requests are answered one at a time
in arrival order (:mod:`memoryd.ipc.turnstile`), waiting at most 50 ms for
their turn, so busy threads do not convoy on the interpreter lock.

Lines are read through a bounded buffer: a request over
:data:`MAX_LINE_BYTES` is answered with ``invalid_request`` and the rest of
that line is discarded unbuffered, so the connection stays usable.
Handlers are plain callables ``params -> result``; any
:class:`~memoryd.errors.RemoteError` they raise is sent as data, anything else
becomes ``internal`` and is logged with its traceback.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable
from typing import Any

import structlog

from memoryd.errors import InternalError, InvalidRequest, RemoteError, UnknownMethod
from memoryd.ipc.protocol import (
    MAX_LINE_BYTES,
    Request,
    decode_request,
    encode_error,
    encode_result,
    peer_uid,
)
from memoryd.ipc.turnstile import Turnstile

Handler = Callable[[dict[str, Any]], Any]

log = structlog.get_logger("memoryd.ipc")

_RECV = 64 * 1024


class LineTooLong(Exception):
    pass


class LineReader:
    """Read ``\\n``-terminated lines from a socket, never holding more than the cap.

    A line over the cap raises :class:`LineTooLong` once; the reader then
    discards bytes up to that line's newline, so the connection can go on.
    """

    def __init__(self, sock: socket.socket, limit: int = MAX_LINE_BYTES) -> None:
        self.sock = sock
        self.limit = limit
        self.buf = bytearray()
        self.discarding = False

    def readline(self) -> bytes | None:
        """The next line without its newline; None at EOF; LineTooLong past the cap."""
        while True:
            nl = self.buf.find(b"\n")
            if nl >= 0:
                line = bytes(self.buf[:nl])
                del self.buf[: nl + 1]
                if self.discarding:
                    self.discarding = False
                    continue
                return line
            if self.discarding:
                self.buf.clear()
            elif len(self.buf) > self.limit:
                self.buf.clear()
                self.discarding = True
                raise LineTooLong
            chunk = self.sock.recv(_RECV)
            if not chunk:
                if self.buf.strip() and not self.discarding:
                    line, self.buf = bytes(self.buf), bytearray()
                    return line
                return None
            self.buf += chunk


class Server:
    """Serve ``handlers`` on an already bound and listening socket."""

    def __init__(
        self,
        listener: socket.socket,
        handlers: dict[str, Handler],
        *,
        allowed_uid: int,
    ) -> None:
        self.listener = listener
        self.handlers = handlers
        self.allowed_uid = allowed_uid
        self._stopping = threading.Event()
        self._clients: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._in_flight = 0
        self._idle = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None
        self._turnstile = Turnstile()

    # -- lifecycle ----------------------------------------------------------

    def start(self) -> None:
        self.listener.settimeout(0.2)
        self._thread = threading.Thread(target=self._accept_loop, name="ipc-accept", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop accepting, let in-flight requests finish, then close every connection."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self.listener.close()
        with self._idle:
            self._idle.wait_for(lambda: self._in_flight == 0, timeout)
            clients = list(self._clients)
        for sock in clients:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    @property
    def connections(self) -> int:
        with self._lock:
            return len(self._clients)

    # -- connections ----------------------------------------------------------

    def _accept_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                sock, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                if self._stopping.is_set():
                    return
                continue
            sock.settimeout(None)
            uid = peer_uid(sock)
            if uid is not None and uid != self.allowed_uid:
                log.warning("ipc.peer_rejected", peer_uid=uid)
                refusal = InvalidRequest("connection refused: peer uid differs from the daemon's")
                self._send(sock, encode_error(None, refusal))
                sock.close()
                continue
            with self._lock:
                self._clients.add(sock)
            threading.Thread(
                target=self._serve_client, args=(sock,), name="ipc-client", daemon=True
            ).start()

    def _serve_client(self, sock: socket.socket) -> None:
        reader = LineReader(sock)
        try:
            while not self._stopping.is_set():
                try:
                    line = reader.readline()
                except LineTooLong:
                    err = InvalidRequest(
                        f"request line exceeds {MAX_LINE_BYTES:,} bytes; it is discarded"
                    )
                    if not self._send(sock, encode_error(None, err)):
                        return
                    continue
                if line is None:
                    return
                if not line.strip():
                    continue
                # In flight until the answer is sent: stop() waits for both.
                with self._idle:
                    self._in_flight += 1
                try:
                    sent = self._send(sock, self._answer_in_turn(line))
                finally:
                    with self._idle:
                        self._in_flight -= 1
                        self._idle.notify_all()
                if not sent:
                    return
        except OSError:
            return  # the client went away mid-request; nobody to answer
        finally:
            with self._lock:
                self._clients.discard(sock)
            with contextlib.suppress(OSError):
                sock.close()

    def _answer_in_turn(self, line: bytes) -> bytes:
        turn = self._turnstile.enter()
        try:
            return self._answer(line)
        finally:
            if turn:
                self._turnstile.leave()

    def _answer(self, line: bytes) -> bytes:
        req_id: Any = None
        try:
            req = decode_request(line)
            req_id = req.id
            return encode_result(req_id, self._dispatch(req))
        except RemoteError as err:
            if req_id is None and isinstance(err.data, dict):
                req_id = err.data.pop("id", None)
                err.data = err.data or None
            return encode_error(req_id, err)
        except Exception:
            log.exception("ipc.handler_failed")
            return encode_error(req_id, InternalError("internal error; see the daemon log"))

    def _dispatch(self, req: Request) -> Any:
        handler = self.handlers.get(req.method)
        if handler is None:
            raise UnknownMethod(
                f"unknown method {req.method!r}", {"methods": sorted(self.handlers)}
            )
        return handler(req.params)

    @staticmethod
    def _send(sock: socket.socket, data: bytes) -> bool:
        try:
            sock.sendall(data)
        except OSError:
            return False
        return True
