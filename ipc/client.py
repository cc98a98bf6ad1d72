"""The Python client: one connection, requests in order, typed replies and errors.

An error answer is raised as the ``RequestError`` subclass of its code. Transport failures
tell "nothing was sent" (``DaemonUnavailable``) from "sent, but no answer" (``NoReply``,
``DaemonTimeout``).
"""

from __future__ import annotations

import itertools
import json
import os
import socket
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypedDict

from memoryd import paths
from memoryd.errors import (
    DaemonTimeout,
    DaemonUnavailable,
    NoReply,
    ProtocolError,
    UnsafeDaemon,
    remote_error,
)
from memoryd.ipc.protocol import encode, peer_uid

if TYPE_CHECKING:
    from memoryd.replies import (
        ContextReply,
        ListReply,
        LoadLastReply,
        SaveResult,
        SelectResult,
        StatusReply,
        WatchReply,
    )


class SocketChoice(TypedDict):
    """The socket a client uses and why (``given explicitly``, ``$MEMORYD_SOCKET``, ...)."""

    path: str
    reason: str


class Client:
    def __init__(self, socket_path: str | Path | None = None, *, timeout: float = 30.0) -> None:
        if socket_path:
            self.socket_path, self.socket_reason = Path(socket_path), "given explicitly"
        else:
            self.socket_path, self.socket_reason = paths.socket_choice()
        self.timeout = timeout
        self._sock: socket.socket | None = None
        self._file: Any = None
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def connect(self) -> None:
        if self._sock is not None:
            return
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(str(self.socket_path))
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            sock.close()
            raise DaemonUnavailable(
                f"no memoryd daemon answers on {self.socket_path} ({exc.strerror})"
                + self._elsewhere()
            ) from None
        except OSError as exc:
            sock.close()
            raise DaemonUnavailable(f"cannot connect to {self.socket_path}: {exc}") from None
        # Nothing is sent before we know who listens: a socket planted by another user.
        server_uid = peer_uid(sock)
        if server_uid is not None and server_uid != os.getuid():
            sock.close()
            raise UnsafeDaemon(
                f"refusing to talk to {self.socket_path}: the process listening on it runs as"
                f" uid {server_uid}, not as us (uid {os.getuid()})"
            )
        self._sock = sock
        self._file = sock.makefile("rb")

    def _elsewhere(self) -> str:
        """Why this socket was used, and the other sockets that exist (a daemon meant instead?)."""
        text = f"; socket chosen by {self.socket_reason}"
        others = paths.other_sockets(self.socket_path)
        if others:
            text += f"; a socket exists at {others[0]} (set MEMORYD_SOCKET to use it)"
        return text

    def describe(self) -> SocketChoice:
        """The socket this client uses and why: ``status`` shows it next to the daemon's."""
        return {"path": str(self.socket_path), "reason": self.socket_reason}

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        if self._sock is not None:
            self._sock.close()
        self._sock = self._file = None

    def __enter__(self) -> Client:
        self.connect()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def call(self, method: str, params: Mapping[str, object] | None = None) -> Any:
        """Send one request (None params left out) and return its ``result``, or raise its error.

        DaemonUnavailable only when the daemon cannot have acted on it; NoReply or
        DaemonTimeout once it may have; ProtocolError for an answer to another request.
        """
        with self._lock:
            self.connect()
            req_id = next(self._ids)
            params = {k: v for k, v in (params or {}).items() if v is not None}
            try:
                try:
                    self._send(encode({"id": req_id, "method": method, "params": params}))
                except DaemonUnavailable as unsent:
                    # It may have said why before it hung up (``busy`` at its cap).
                    try:
                        said = self._receive()
                    except (NoReply, DaemonTimeout):
                        raise unsent from None
                    reply = _decode_reply(said, req_id)
                    self.close()
                else:
                    reply = _decode_reply(self._receive(), req_id)
            except (NoReply, ProtocolError, DaemonUnavailable):
                self.close()  # the stream's state is unknown now: never reuse it
                raise
        if "error" in reply:
            err = reply["error"]
            raise remote_error(
                str(err.get("code", "internal")), str(err.get("message", "")), err.get("data")
            )
        return reply["result"]

    def _send(self, data: bytes) -> None:
        assert self._sock is not None
        try:
            self._sock.sendall(data)
        except TimeoutError:
            # Part of the line may be in the daemon's buffer; it could still act on it.
            raise self._timed_out() from None
        except OSError as exc:
            raise DaemonUnavailable(
                f"the daemon hung up before taking the request: {exc}"
            ) from None

    def _receive(self) -> bytes:
        try:
            line: bytes = self._file.readline()
        except TimeoutError:
            raise self._timed_out() from None
        except OSError as exc:
            raise NoReply(f"the connection to the daemon broke before it answered: {exc}") from None
        if not line:
            raise NoReply("the daemon closed the connection without answering")
        return line

    def _timed_out(self) -> DaemonTimeout:
        return DaemonTimeout(f"the daemon did not answer within {self.timeout:g} s")

    # The methods an agent wrapper uses: plain arguments in, typed replies out.

    def status(self) -> StatusReply:
        result: StatusReply = self.call("status")
        return result

    def list(self, dir: str) -> ListReply:
        result: ListReply = self.call("list", {"dir": dir})
        return result

    def watch(self, dir: str) -> WatchReply:
        result: WatchReply = self.call("watch", {"dir": dir})
        return result

    def select(self, query: str, dir: str, **params: object) -> SelectResult:
        """``params``: ``select``'s others (``surfaced``, ``limit``, ...)."""
        result: SelectResult = self.call("select", {"query": query, "dir": dir, **params})
        return result

    def save(self, dir: str, project: str, **params: object) -> SaveResult:
        result: SaveResult = self.call("save", {"dir": dir, "project": project, **params})
        return result

    def load_last(self, dir: str, project: str, **params: object) -> LoadLastReply:
        result: LoadLastReply = self.call("load_last", {"dir": dir, "project": project, **params})
        return result

    def context(self, task: str, dir: str | Sequence[str], **params: object) -> ContextReply:
        dirs = dir if isinstance(dir, str) else list(dir)
        result: ContextReply = self.call("context", {"task": task, "dir": dirs, **params})
        return result


# dict[str, Any]: its ``result`` is whichever method's reply the caller of ``call`` names.
def _decode_reply(line: bytes, req_id: int) -> dict[str, Any]:
    """The reply to request ``req_id`` (an error with a null id too: the daemon could not
    read the request's id), or ProtocolError."""
    try:
        reply = json.loads(line)
    except ValueError as exc:
        raise ProtocolError(f"the daemon's answer is not valid JSON ({exc})") from None
    if not isinstance(reply, dict) or not ("result" in reply or "error" in reply):
        raise ProtocolError("the daemon's answer is not a reply object")
    if "error" in reply and not isinstance(reply["error"], dict):
        raise ProtocolError("the daemon's error answer is not an object")
    reply_id = reply.get("id")
    if reply_id != req_id and not (reply_id is None and "error" in reply):
        raise ProtocolError(f"the daemon answered request {reply_id!r} instead of {req_id}")
    return reply
