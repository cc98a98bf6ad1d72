"""The Python client: one connection, requests in order, typed replies and errors.

The daemon's error objects are raised as the
:class:`~memoryd.errors.RequestError` subclass of their code. Transport
failures tell "nothing was sent" (:class:`~memoryd.errors.DaemonUnavailable`)
from "sent, but no answer" (:class:`~memoryd.errors.NoReply`,
:class:`~memoryd.errors.DaemonTimeout`): only the first leaves a caller free to
do the work itself.
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
from memoryd.ipc.protocol import encode_request, peer_uid

if TYPE_CHECKING:
    from memoryd.replies import (
        ContextReply,
        ListReply,
        LoadLastReply,
        ReindexReply,
        SaveResult,
        SelectResult,
        ShutdownReply,
        StatusReply,
        UnwatchReply,
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

    # -- connection -----------------------------------------------------------

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
        # Nothing is sent before we know who listens: a socket planted by
        # another user (a hijacked fallback runtime dir) must not get our query.
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

    # -- calls --------------------------------------------------------------------

    def call(self, method: str, params: Mapping[str, object] | None = None) -> Any:
        """Send one request and return its ``result`` (or raise its error).

        Failures say whether the daemon may have acted on the request:
        :class:`DaemonUnavailable` only when it cannot have (no connection, or
        the daemon hung up before the whole request line was sent),
        :class:`NoReply` / :class:`DaemonTimeout` once it may have, and
        :class:`ProtocolError` when the answer does not belong to the request.
        """
        with self._lock:
            self.connect()
            req_id = next(self._ids)
            params = {k: v for k, v in (params or {}).items() if v is not None}
            try:
                try:
                    self._send(encode_request(req_id, method, params))
                except DaemonUnavailable:
                    # It may have said why before it hung up (``busy`` at its cap).
                    said = self._said_before_hanging_up()
                    if said is None:
                        raise
                    reply = _decode_reply(said, req_id)
                    self.close()
                else:
                    reply = _decode_reply(self._receive(), req_id)
            except (NoReply, ProtocolError, DaemonUnavailable):
                # The stream's state is unknown now: never reuse it.
                self.close()
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
            # The daemon closed its end: it will not read the rest of the line.
            raise DaemonUnavailable(
                f"the daemon hung up before taking the request: {exc}"
            ) from None

    def _said_before_hanging_up(self) -> bytes | None:
        """A line the daemon wrote before closing a connection it would not serve, if any."""
        try:
            line: bytes = self._file.readline()
        except OSError:
            return None
        return line or None

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

    # Plain arguments in, typed replies out; unknown keywords are named by the daemon.

    def status(self) -> StatusReply:
        result: StatusReply = self.call("status")
        return result

    def list(self, dir: str) -> ListReply:
        result: ListReply = self.call("list", {"dir": dir})
        return result

    def reindex(self, dir: str | None = None) -> ReindexReply:
        result: ReindexReply = self.call("reindex", {"dir": dir})
        return result

    def watch(self, dir: str) -> WatchReply:
        result: WatchReply = self.call("watch", {"dir": dir})
        return result

    def unwatch(self, dir: str) -> UnwatchReply:
        """Stop watching the root ``dir`` and drop its files from the index."""
        result: UnwatchReply = self.call("unwatch", {"dir": dir})
        return result

    def shutdown(self) -> ShutdownReply:
        result: ShutdownReply = self.call("shutdown")
        return result

    def select(self, query: str, dir: str, **params: object) -> SelectResult:
        """The memories that clearly help ``query``; ``params`` are ``select``'s others
        (``surfaced``, ``limit``, ``session_id``, ... as in docs/protocol.md#select)."""
        result: SelectResult = self.call("select", {"query": query, "dir": dir, **params})
        return result

    def save(self, dir: str, project: str, **params: object) -> SaveResult:
        """Write a session memory; ``params`` are the other ``save`` params."""
        result: SaveResult = self.call("save", {"dir": dir, "project": project, **params})
        return result

    def load_last(self, dir: str, project: str, **params: object) -> LoadLastReply:
        """The newest session memory of ``project``; credentials redacted unless
        ``reveal_secrets=True``."""
        result: LoadLastReply = self.call("load_last", {"dir": dir, "project": project, **params})
        return result

    def context(self, task: str, dir: str | Sequence[str], **params: object) -> ContextReply:
        """The cited prior-session brief for ``task`` (``project``, ``budget_tokens``)."""
        dirs = dir if isinstance(dir, str) else list(dir)
        result: ContextReply = self.call("context", {"task": task, "dir": dirs, **params})
        return result


# dict[str, Any]: its ``result`` is whichever method's reply, which :meth:`Client.call`'s
# caller names (the helpers below annotate it with the reply type).
def _decode_reply(line: bytes, req_id: int) -> dict[str, Any]:
    """The reply object for request ``req_id``, or :class:`ProtocolError`.

    An error answer with a null id is accepted: the daemon sends one when it
    could not read the request's id (a line over the size limit, a refused peer).
    """
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
