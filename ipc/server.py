"""A threaded Unix-socket server for the line protocol: one thread per connection.

Handlers are ``params -> result``; a :class:`~memoryd.errors.RequestError` they raise
is sent as data, anything else is logged and answered ``internal``. A line over
:data:`MAX_LINE_BYTES` is answered ``invalid_request`` once past it, then skipped. At most
``max_connections`` are served: one more (or one met while out of descriptors) replaces
the connection idle longest, else is answered ``busy`` from a spare descriptor and
closed. Peers of another uid are refused; a connection idle for ``idle_timeout`` is closed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, BinaryIO

import structlog

from memoryd.errors import Busy, InternalError, InvalidRequest, RequestError, UnknownMethod
from memoryd.ipc.protocol import (
    MAX_LINE_BYTES,
    decode_request,
    encode,
    encode_error,
    peer_uid,
)

if TYPE_CHECKING:
    from memoryd.config import Config

Handler = Callable[[dict[str, Any]], Any]

log = structlog.get_logger("memoryd.ipc")

IDLE_EVICT_S = 1.0
"""At the cap or out of descriptors, a connection silent this long is closed for a new one."""
LISTENER_CHECK_S = 1.0
"""How often the accept thread asks whether its socket must be bound again."""
_OUT_OF_DESCRIPTORS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
_SHED_LOG_EVERY_S = 10.0


def _lines(file: BinaryIO) -> Iterator[bytes | None]:
    """Lines from a socket's file, never more than the cap held: None for a line over it as
    soon as it is seen, which is then skipped up to its newline."""
    discarding = False
    while line := file.readline(MAX_LINE_BYTES + 1):
        complete = line.endswith(b"\n")
        if discarding:
            discarding = not complete
        elif len(line) > MAX_LINE_BYTES and not complete:
            discarding = True
            yield None
        else:
            yield line


class Server:
    """Serve a method table (given to :meth:`start`) on an already bound and listening socket,
    to this process's user, with ``cfg``'s ``max_connections`` and ``idle_timeout``."""

    def __init__(
        self,
        listener: socket.socket,
        cfg: Config,
        *,
        evict_after: float = IDLE_EVICT_S,
        on_fatal: Callable[[str], None] = lambda reason: None,
        on_disconnect: Callable[[], None] = lambda: None,
        rebind: Callable[[], socket.socket | None] = lambda: None,
    ) -> None:
        self.listener = listener
        self.handlers: dict[str, Handler] = {}
        self.reconfigure(cfg)
        self.evict_after = evict_after
        self.on_fatal = on_fatal
        self.on_disconnect = on_disconnect
        """Run on a connection's thread as it ends: what the thread held goes with it."""
        self.refused = 0
        """Connections answered ``busy``."""
        self.rebind = rebind
        """Asked by the accept thread every second: a new listening socket, or None."""
        self._spare: int | None = _spare_fd()
        self._shed_logged = 0.0
        self._check_at = time.monotonic() + LISTENER_CHECK_S
        self._stopping = threading.Event()
        self._clients: set[socket.socket] = set()
        self._waiting: dict[socket.socket, tuple[float, threading.Thread]] = {}
        """Connections waiting for their next request: since when (monotonic), whose thread."""
        self._lock = threading.Lock()
        self._in_flight = 0
        self._idle = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None

    def start(self, handlers: dict[str, Handler]) -> None:
        """Serve ``handlers`` (method name -> callable) from now on."""
        self.handlers = handlers
        self.listener.settimeout(0.2)
        self._thread = threading.Thread(target=self._accept_loop, name="ipc-accept", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop accepting, let in-flight requests finish, then close every connection."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self.listener.close()
        if self._spare is not None:
            os.close(self._spare)
            self._spare = None
        with self._idle:
            self._idle.wait_for(lambda: self._in_flight == 0, timeout)
            clients = list(self._clients)
        for sock in clients:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def reconfigure(self, cfg: Config) -> None:
        """SIGHUP: the new cap and idle timeout apply to the next connection."""
        self.max_connections = cfg.max_connections
        self.idle_timeout = cfg.idle_timeout

    @property
    def connections(self) -> int:
        with self._lock:
            return len(self._clients)

    def check_listener(self) -> None:
        """Ask :attr:`rebind` at the accept thread's next turn (SIGHUP), not in a second."""
        self._check_at = 0.0

    def _accept_loop(self) -> None:
        try:
            while not self._stopping.is_set():
                if time.monotonic() >= self._check_at:
                    self._check_at = time.monotonic() + LISTENER_CHECK_S
                    if (fresh := self.rebind()) is not None:
                        fresh.settimeout(0.2)
                        old, self.listener = self.listener, fresh
                        old.close()
                try:
                    sock, _ = self.listener.accept()
                except TimeoutError:
                    continue
                except OSError as exc:
                    if self._stopping.is_set():
                        return
                    if exc.errno in _OUT_OF_DESCRIPTORS:
                        self._shed(exc)
                    else:
                        time.sleep(0.01)  # never a busy loop on a failing accept
                    continue
                self._admit(sock)
        except BaseException as exc:  # a bug: nothing answers any more, so say so and exit
            log.exception("ipc.accept_failed")
            self.on_fatal(f"the accept loop failed: {exc!r}")

    def _admit(self, sock: socket.socket) -> None:
        """Serve ``sock`` on a thread of its own, or answer ``busy`` (or refuse the peer)."""
        try:
            uid = peer_uid(sock)
        except OSError:
            sock.close()
            return
        if uid is not None and uid != os.getuid():
            log.warning("ipc.peer_rejected", peer_uid=uid)
            refusal = InvalidRequest("connection refused: peer uid differs from the daemon's")
            self._refuse(sock, refusal)
            return
        with self._lock:
            full = len(self._clients) >= self.max_connections
        if full and self._close_idlest() is None:
            self._refuse(sock, _busy(f"{self.max_connections} connections are open (the limit)"))
            return
        with self._lock:  # only this thread adds: there is room now
            self._clients.add(sock)
        sock.settimeout(self.idle_timeout)
        try:
            threading.Thread(
                target=self._serve_client, args=(sock,), name="ipc-client", daemon=True
            ).start()
        except RuntimeError as exc:  # "can't start new thread": a thread or memory limit
            with self._lock:
                self._clients.discard(sock)
            log.warning("ipc.thread_start_failed", error=str(exc), connections=self.connections)
            self._refuse(sock, _busy("no thread could be started for the connection"))

    def _refuse(self, sock: socket.socket, err: RequestError) -> None:
        """One error line, then close; the accept thread never waits on the client."""
        if isinstance(err, Busy):
            self.refused += 1
        with contextlib.suppress(OSError):
            sock.settimeout(0.5)
            sock.sendall(encode_error(None, err))
            sock.shutdown(socket.SHUT_WR)
        sock.close()

    def _close_idlest(self) -> threading.Thread | None:
        """Close the connection waiting longest, if for ``evict_after`` at least, and return
        its thread (which then ends); None when every connection is busy or just spoke."""
        with self._lock:
            idlest = min(self._waiting.items(), key=lambda item: item[1][0], default=None)
            if idlest is None or time.monotonic() - idlest[1][0] < self.evict_after:
                return None
            sock, (_since, thread) = idlest
            del self._waiting[sock]
            self._clients.discard(sock)
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        return thread

    def _shed(self, exc: OSError) -> None:
        """Out of descriptors: close an idle connection, else answer the next client ``busy``
        from the spare descriptor, so the backlog never spins the accept loop."""
        now = time.monotonic()
        if now - self._shed_logged > _SHED_LOG_EVERY_S:
            self._shed_logged = now
            log.warning("ipc.out_of_descriptors", error=exc.strerror, connections=self.connections)
        closed = self._close_idlest()
        if closed is not None:
            closed.join(1.0)  # it wakes at once; its database connection goes with it
            return
        if self._spare is None:
            time.sleep(0.05)
            self._spare = _spare_fd()
            return
        os.close(self._spare)
        self._spare = None
        try:
            sock, _ = self.listener.accept()
        except OSError:
            time.sleep(0.05)
        else:
            self._refuse(sock, _busy("the daemon is out of file descriptors"))
        self._spare = _spare_fd()

    def _serve_client(self, sock: socket.socket) -> None:
        file = sock.makefile("rb")
        lines = _lines(file)
        try:
            while not self._stopping.is_set():
                with self._lock:
                    self._waiting[sock] = (time.monotonic(), threading.current_thread())
                line = next(lines, b"")
                if line is None:
                    err = InvalidRequest(
                        f"request line exceeds {MAX_LINE_BYTES:,} bytes; it is discarded"
                    )
                    sock.sendall(encode_error(None, err))
                    continue
                if not line:
                    return
                if not line.strip():
                    continue
                # In flight until the answer is sent: stop() waits for both.
                with self._idle:
                    self._waiting.pop(sock, None)
                    self._in_flight += 1
                try:
                    sock.sendall(self._answer(line))
                finally:
                    with self._idle:
                        self._in_flight -= 1
                        self._idle.notify_all()
        except OSError:
            return  # the client went away mid-request; nobody to answer
        finally:
            with self._lock:
                self._clients.discard(sock)
                self._waiting.pop(sock, None)
            with contextlib.suppress(OSError):
                file.close()
                sock.close()
            self.on_disconnect()

    def _answer(self, line: bytes) -> bytes:
        req_id: Any = None
        try:
            req_id, method, params = decode_request(line)
            handler = self.handlers.get(method)
            if handler is None:
                why = f"unknown method {method!r}"
                raise UnknownMethod(why, {"methods": sorted(self.handlers)})
            return encode({"id": req_id, "result": handler(params)})
        except RequestError as err:
            if req_id is None and isinstance(err.data, dict):
                req_id = err.data.pop("id", None)
                err.data = err.data or None
            return encode_error(req_id, err)
        except Exception:
            log.exception("ipc.handler_failed")
            return encode_error(req_id, InternalError("internal error; see the daemon log"))


def _busy(why: str) -> Busy:
    return Busy(f"memoryd is busy: {why}; retry in a moment", {"retry_after_s": 1})


def _spare_fd() -> int | None:
    """A descriptor held in reserve, closed to make room for one ``busy`` answer."""
    try:
        return os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
