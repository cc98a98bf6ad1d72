"""``memoryd mcp``: the daemon's memory methods as tools for any MCP client, over stdio.

Newline-delimited JSON-RPC 2.0 with the standard library: ``initialize``, ``ping``,
``tools/list``, ``tools/call``; anything else is "method not found". A tool's failure is a
tool error (``isError``); an invalid message gets its JSON-RPC error; no message ends the
session. A client offering roots is asked for them, and a tool call waits for them.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any, cast
from urllib.parse import unquote, urlparse

from memoryd import __version__
from memoryd.errors import InvalidParams
from memoryd.integrations.mcp_calls import MemoryTools, ToolAnswer, ToolError
from memoryd.integrations.mcp_tools import BY_NAME, TOOLS, check_arguments
from memoryd.ipc.protocol import MAX_LINE_BYTES, encode

PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")  # newest first
MAX_MESSAGE_BYTES = 2 * MAX_LINE_BYTES  # a longer message is refused unread
INSTRUCTIONS = (
    "Tools over the user's AI-agent memory folders, indexed by a local daemon. "
    "Use memory_select before a task to pull in the few memories that matter (their text "
    "comes with them), memory_load_last / memory_context at the start of a session to "
    "resume, and memory_save at checkpoints and at the end of a session."
)

MAX_HELD = 100  # messages held back while waiting for the client's roots
ROOTS_CHANGED = ("notifications/initialized", "notifications/roots/list_changed")

# JSON-RPC error codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


Message = dict[str, Any]  # a JSON-RPC message, or an MCP result object, as sent


class StdioServer:
    """One MCP session on a pair of byte streams, one message per line."""

    def __init__(self, tools: MemoryTools, reader: IO[bytes], writer: IO[bytes]) -> None:
        self.tools = tools
        self.reader = reader
        self.writer = writer
        self._client_has_roots = False
        self._roots_asked: str | None = None  # our roots/list's id while it is unanswered
        self._asks = 0
        self._held: deque[bytes | None] = deque()  # read while waiting for the roots; answered next

    def serve(self) -> None:
        """Answer messages until the client closes the stream; no message can end it."""
        for line in self._lines():
            if line is None:
                reply: Message | None = _error(
                    None, INVALID_REQUEST, f"message longer than {MAX_MESSAGE_BYTES} bytes"
                )
            elif not line.strip():
                continue
            else:
                try:
                    reply = self.handle_line(line)
                except Exception as exc:  # a defect here must cost one answer, not the session
                    reply = _error(None, INTERNAL_ERROR, f"memoryd mcp: internal error: {exc!r}")
            if reply is not None:
                self._send(reply)

    def _send(self, message: Mapping[str, object]) -> None:
        self.writer.write(encode(message))
        self.writer.flush()

    def _lines(self) -> Iterator[bytes | None]:
        """Each message line, those held back first; None for one too long."""
        while True:
            if self._held:
                yield self._held.popleft()
            elif (line := self._read()) != b"":
                yield line
            else:
                return

    def _read(self) -> bytes | None:
        """The next line (``b""`` at the end); None for one too long (read past, not kept)."""
        line = self.reader.readline(MAX_MESSAGE_BYTES + 1)
        if len(line) <= MAX_MESSAGE_BYTES or line.endswith(b"\n"):
            return line
        while line and not line.endswith(b"\n"):
            line = self.reader.readline(MAX_MESSAGE_BYTES)
        return None

    def _ask_roots(self) -> None:
        self._asks += 1
        self._roots_asked = f"memoryd-roots-{self._asks}"
        self._send({"jsonrpc": "2.0", "id": self._roots_asked, "method": "roots/list"})

    def _take_roots(self, message: Mapping[str, object]) -> None:
        """Our ``roots/list`` answered: keep its ``file://`` roots (an error leaves none)."""
        self._roots_asked = None
        result = message.get("result")
        listed = result.get("roots") if isinstance(result, dict) else None
        uris = [r.get("uri") for r in listed or [] if isinstance(r, dict)]
        self.tools.roots = [p for u in uris if isinstance(u, str) and (p := _file_path(u))]

    def _await_roots(self) -> None:
        """Read until the roots arrive, holding back up to :data:`MAX_HELD` other messages."""
        while self._roots_asked is not None and len(self._held) < MAX_HELD:
            line = self._read()
            if line == b"":
                return
            message: object = None
            with contextlib.suppress(ValueError, RecursionError):
                message = _decode(line) if line is not None else None
            answer = isinstance(message, dict) and "method" not in message
            if answer and cast("dict[str, object]", message).get("id") == self._roots_asked:
                self._take_roots(cast("dict[str, object]", message))
            else:
                self._held.append(line)

    def handle_line(self, line: bytes) -> Message | None:
        try:
            message = _decode(line)
        except (ValueError, RecursionError) as exc:
            return _error(None, PARSE_ERROR, f"not valid JSON: {exc}")
        if not isinstance(message, dict):
            return _error(None, INVALID_REQUEST, "not a JSON-RPC 2.0 object (batches unsupported)")
        msg_id = message.get("id")
        if not _valid_id(msg_id):
            return _error(None, INVALID_REQUEST, "'id' must be a string, an integer or null")
        if message.get("jsonrpc") != "2.0":
            return _error(msg_id, INVALID_REQUEST, "not a JSON-RPC 2.0 object ('jsonrpc': '2.0')")
        method = message.get("method")
        if method is None and ("result" in message or "error" in message):
            if self._roots_asked is not None and msg_id == self._roots_asked:
                self._take_roots(message)
            return None  # otherwise a response to a request we never sent
        if not isinstance(method, str) or not valid_text(method):
            return _error(msg_id, INVALID_REQUEST, "'method' must be a string")
        if "id" not in message:
            # A notification: initialized, cancelled, roots/list_changed, ...
            if self._client_has_roots and method in ROOTS_CHANGED:
                self._ask_roots()
            return None
        params = message.get("params") or {}
        if not isinstance(params, dict):
            return _error(msg_id, INVALID_PARAMS, "params must be an object")
        try:
            return {"jsonrpc": "2.0", "id": msg_id, "result": self.dispatch(method, params)}
        except _RpcError as exc:
            return _error(msg_id, exc.code, exc.message)

    def dispatch(self, method: str, params: Mapping[str, object]) -> Mapping[str, object]:
        if method == "initialize":
            asked = params.get("protocolVersion")
            version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
            offered = params.get("capabilities")
            self._client_has_roots = isinstance(offered, dict) and "roots" in offered
            return {
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "memoryd", "title": "memoryd", "version": __version__},
                "instructions": INSTRUCTIONS,
            }
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": TOOLS}
        if method == "tools/call":
            return self.call_tool(params)
        raise _RpcError(METHOD_NOT_FOUND, f"method not found: {method}")

    def call_tool(self, params: Mapping[str, object]) -> Message:
        name = params.get("name")
        if not isinstance(name, str) or name not in BY_NAME:
            raise _RpcError(INVALID_PARAMS, f"unknown tool: {name!r}")
        args = params.get("arguments")
        args = {} if args is None else args
        self._await_roots()
        try:
            if not isinstance(args, dict):
                raise ToolError(f"arguments must be a JSON object, not {type(args).__name__}")
            if not valid_text(json.dumps(args, ensure_ascii=False)):
                raise InvalidParams("text must be valid Unicode: it holds a lone surrogate")
            check_arguments(name, args)
            run: Callable[[Mapping[str, object]], ToolAnswer] = getattr(self.tools, name)
            structured, text = run(args)
        except InvalidParams as exc:
            return _tool_error(f"invalid arguments for {name}: {exc.message}")
        except ToolError as exc:
            return _tool_error(str(exc))
        except Exception as exc:  # a defect in one tool must not end the session
            return _tool_error(f"memoryd mcp: {name} failed unexpectedly: {exc!r}")
        return {
            "content": [{"type": "text", "text": text}],
            "structuredContent": structured,
            "isError": False,
        }


class _RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def _tool_error(text: str) -> Message:
    """A tool result the agent reads (MCP: tool failures are not protocol errors)."""
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _decode(line: bytes) -> object:
    """One message as JSON; raises ValueError (or RecursionError, nested too deep)."""
    return json.loads(line.decode("utf-8"), parse_constant=_no_constant)


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _file_path(uri: str) -> str | None:
    """The path a ``file://`` URI names; None for another scheme or no usable path."""
    try:
        parsed = urlparse(uri)
    except ValueError:
        return None
    path = unquote(parsed.path)
    usable = parsed.scheme == "file" and path and "\0" not in path and valid_text(path)
    return path if usable else None


def valid_text(text: str) -> bool:
    """False for text holding a lone surrogate (JSON's ``\\ud800``), which no file can hold."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _valid_id(msg_id: object) -> bool:
    """JSON-RPC ids are strings (valid text), integers or null."""
    if isinstance(msg_id, str):
        return valid_text(msg_id)
    return msg_id is None or (isinstance(msg_id, int) and not isinstance(msg_id, bool))


def _error(msg_id: object, code: int, message: str) -> Message:
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


def serve(socket: Path | None = None) -> None:
    """Serve MCP on stdin/stdout until the client closes the stream."""
    tools = MemoryTools(socket, os.environ)
    try:
        StdioServer(tools, sys.stdin.buffer, sys.stdout.buffer).serve()
    finally:
        tools.close()
