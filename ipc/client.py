"""The Python client: one method per protocol method, typed errors.

A :class:`Client` keeps one connection open and sends requests one at a time
(the protocol answers in order). Error objects from the daemon are raised as
the :class:`~memoryd.errors.RemoteError` subclass for their code; no daemon on
the socket is :class:`~memoryd.errors.DaemonUnavailable`.
"""

from __future__ import annotations

import itertools
import json
import os
import socket
import threading
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from memoryd import paths
from memoryd.errors import DaemonUnavailable, InvalidRequest, UnsafeDaemon, remote_error
from memoryd.ipc.protocol import encode_request, peer_uid


class Client:
    def __init__(self, socket_path: str | Path | None = None, *, timeout: float = 30.0) -> None:
        self.socket_path = Path(socket_path) if socket_path else paths.default_socket()
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

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send one request and return its ``result`` (or raise its error)."""
        with self._lock:
            self.connect()
            assert self._sock is not None
            req_id = next(self._ids)
            params = {k: v for k, v in (params or {}).items() if v is not None}
            try:
                self._sock.sendall(encode_request(req_id, method, params))
                line = self._file.readline()
            except OSError as exc:
                self.close()
                raise DaemonUnavailable(f"connection to the daemon failed: {exc}") from None
            if not line:
                self.close()
                raise DaemonUnavailable("the daemon closed the connection without answering")
        reply = json.loads(line)
        if "error" in reply:
            err = reply["error"]
            raise remote_error(err.get("code", "internal"), err.get("message", ""), err.get("data"))
        if reply.get("id") != req_id:
            raise InvalidRequest(f"answer for request {reply.get('id')!r}, expected {req_id}")
        return reply["result"]

    def status(self) -> dict[str, Any]:
        result: dict[str, Any] = self.call("status")
        return result

    def list(self, dir: str) -> dict[str, Any]:
        result: dict[str, Any] = self.call("list", {"dir": dir})
        return result

    def reindex(self, dir: str | None = None) -> dict[str, Any]:
        result: dict[str, Any] = self.call("reindex", {"dir": dir})
        return result

    def watch(self, dir: str) -> dict[str, Any]:
        result: dict[str, Any] = self.call("watch", {"dir": dir})
        return result

    def shutdown(self) -> dict[str, Any]:
        result: dict[str, Any] = self.call("shutdown")
        return result

    def select(
        self,
        query: str,
        dir: str,
        *,
        surfaced: Sequence[str] | None = None,
        recent_tools: Sequence[str] | None = None,
        limit: int | None = None,
        ranker: str | None = None,
        session_id: str | None = None,
    ) -> dict[str, Any]:
        """The memories that clearly help ``query`` (see docs/protocol.md#select)."""
        result: dict[str, Any] = self.call(
            "select",
            {
                "query": query,
                "dir": dir,
                "surfaced": None if surfaced is None else list(surfaced),
                "recent_tools": None if recent_tools is None else list(recent_tools),
                "limit": limit,
                "ranker": ranker,
                "session_id": session_id,
            },
        )
        return result

    def stats(self, since: str | float | None = None) -> dict[str, Any]:
        result: dict[str, Any] = self.call("stats", {"since": since})
        return result

    def save(self, dir: str, project: str, **fields: Any) -> dict[str, Any]:
        """Write a session memory; ``fields`` are the other ``save`` params (snake_case)."""
        result: dict[str, Any] = self.call("save", {"dir": dir, "project": project, **fields})
        return result

    def load_last(
        self, dir: str, project: str, *, reveal_secrets: bool | None = None
    ) -> dict[str, Any]:
        """The newest session memory of ``project``; credentials redacted unless revealed."""
        result: dict[str, Any] = self.call(
            "load_last", {"dir": dir, "project": project, "reveal_secrets": reveal_secrets}
        )
        return result

    def context(
        self,
        task: str,
        dir: str | Sequence[str],
        *,
        project: str | None = None,
        budget_tokens: int | None = None,
    ) -> dict[str, Any]:
        """The cited prior-session brief for ``task``."""
        dirs = dir if isinstance(dir, str) else list(dir)
        result: dict[str, Any] = self.call(
            "context",
            {"task": task, "dir": dirs, "project": project, "budget_tokens": budget_tokens},
        )
        return result

    def report(
        self, dir: str | None = None, older_than: str | float | None = None
    ) -> dict[str, Any]:
        """Write a compaction report now (every root, or ``dir``); its paths and counts."""
        result: dict[str, Any] = self.call("report", {"dir": dir, "older_than": older_than})
        return result
