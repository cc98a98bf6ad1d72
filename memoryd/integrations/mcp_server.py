"""``memoryd mcp``: the daemon's memory methods as tools for any MCP client, over stdio.

Claude Code connects MCP servers without waiting for them, so a server that
is not ready when the first prompt goes out is missing from it. Importing
the ``mcp`` SDK is slow (its package imports both client and server and
builds every protocol model), which is why this server speaks the
protocol itself: newline-delimited JSON-RPC 2.0 with the ``initialize``
handshake (protocol versions 2024-11-05 to 2025-11-25), ``ping``,
``tools/list`` and ``tools/call``, using only the standard library and
memoryd's light client modules. It answers ``initialize`` as soon as the
interpreter is up and adds little per call over the daemon's own time
(bench/startup_bench.py measures both). ``server/discover``
(the stateless 2026 era) is answered "method not found", which makes such
clients fall back to the handshake.

Every tool sends its request through one persistent
:class:`memoryd.ipc.client.Client`, so the warm daemon does the work; this
server never starts a daemon. A daemon that is not running, bad arguments and
any error the daemon answers with come back as tool errors (``isError``)
whose text tells the agent what happened. Each result carries the answer as
``structuredContent`` and a short text summary. Claude Code (2.1) hands the
model the structured result as JSON and drops the text; other clients show
the text. So both are written for the model: ``memory_select`` puts each
memory's text in both, capped as the hook caps it (:mod:`._delivery`), and
the daemon's bookkeeping (telemetry counts, capabilities) is left out.

Under Claude Code the server knows the project (``$CLAUDE_PROJECT_DIR``) and
the session (``$CLAUDE_CODE_SESSION_ID``): ``dir`` defaults to the project's
memory folder as Claude Code names it, and what the session was shown is
kept in the same record the hook keeps (:mod:`._hook_state`), so the hook
and the tool never hand the model the same memory twice.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NotRequired, TypedDict, cast

from memoryd import __version__
from memoryd._delivery import memory_block, memory_text
from memoryd.claude_folders import memory_folder
from memoryd.errors import START_HINT, DaemonUnavailable, MemorydError, RequestError
from memoryd.integrations._hook_state import SessionState
from memoryd.integrations.mcp_tools import BY_NAME, TOOLS, ObjectSchema
from memoryd.ipc.client import Client

if TYPE_CHECKING:
    from memoryd.replies import (
        ContextReply,
        LoadLastReply,
        SaveResult,
        SelectResult,
        StatusReply,
    )

PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
"""The handshake-era versions this server speaks, newest first."""
CALL_TIMEOUT_S = 60.0
SELECT_BOOKKEEPING = ("excluded", "dropped_unknown", "latency_ms")
"""Fields of a ``select`` answer that are telemetry, not for the model (``memoryd stats``)."""
INSTRUCTIONS = (
    "Tools over the user's AI-agent memory folders, indexed by a local daemon. "
    "Use memory_select before a task to pull in the few memories that matter (their text "
    "comes with them), memory_load_last / memory_context at the start of a session to "
    "resume, and memory_save at checkpoints and at the end of a session."
)

# JSON-RPC error codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602


class TextContent(TypedDict):
    type: str
    text: str


class ToolCallResult(TypedDict):
    """The result of ``tools/call`` (MCP's ``CallToolResult``)."""

    content: list[TextContent]
    structuredContent: NotRequired[Mapping[str, object]]
    isError: bool


class ErrorObject(TypedDict):
    code: int
    message: str


class RpcResult(TypedDict):
    """A JSON-RPC 2.0 response that succeeded."""

    jsonrpc: str
    id: object
    result: Mapping[str, object]


class RpcFailure(TypedDict):
    """A JSON-RPC 2.0 response carrying an error."""

    jsonrpc: str
    id: object
    error: ErrorObject


ToolAnswer = tuple[Mapping[str, object], str]
"""A tool's ``(structured result, text for the model)``."""


class ToolError(Exception):
    """A tool call that failed in a way the agent should read (sent with ``isError``)."""


class MemoryTools:
    """The tools, over one daemon connection; ``environ`` says who started us."""

    def __init__(self, socket: Path | None, environ: Mapping[str, str]) -> None:
        self._client = Client(socket, timeout=CALL_TIMEOUT_S)
        self._project = environ.get("CLAUDE_PROJECT_DIR") or None
        self._session = environ.get("CLAUDE_CODE_SESSION_ID") or None

    def close(self) -> None:
        self._client.close()

    def call(self, name: str, args: object) -> ToolAnswer:
        """``(structured result, text for the model)``; raises :class:`ToolError`."""
        tool = BY_NAME[name]
        checked = _check(tool["inputSchema"], args)
        run: Callable[[Mapping[str, object]], ToolAnswer] = getattr(self, name)
        return run(checked)

    def _ask(self, method: str, params: Mapping[str, object]) -> Any:
        """The daemon's answer to one request, every failure turned into a :class:`ToolError`."""
        try:
            return self._client.call(method, params)
        except DaemonUnavailable as exc:
            raise ToolError(
                f"the memoryd daemon is not running ({exc}); {START_HINT} and retry "
                "(this server never starts one)"
            ) from None
        except RequestError as exc:
            raise ToolError(f"memoryd {method} failed [{exc.code}]: {exc.message}") from None
        except MemorydError as exc:  # sent, but no (valid) answer: do not retry blindly
            raise ToolError(f"memoryd {method} failed: {exc}") from None

    def _dir(self, args: Mapping[str, object]) -> str:
        given = args.get("dir")
        if isinstance(given, str) and given:
            return given
        if self._project:
            return str(memory_folder(self._project).directory)
        raise ToolError(
            "'dir' is required: this server was not started by Claude Code "
            "($CLAUDE_PROJECT_DIR is not set), so it has no project folder to default to"
        )

    # -- the tools ------------------------------------------------------------

    def memory_select(self, args: Mapping[str, object]) -> ToolAnswer:
        directory = self._dir(args)
        session = cast("str | None", args.get("session_id")) or self._session
        state = SessionState.load(session) if session else None
        surfaced = _listed(args.get("surfaced"))
        if state is not None:
            surfaced += state.surfaced_in(os.path.realpath(directory))
        params = {
            "query": args["query"],
            "dir": directory,
            "surfaced": surfaced,
            "recent_tools": args.get("recent_tools"),
            "limit": args.get("limit"),
            "session_id": session,
        }
        reply: SelectResult = self._ask("select", params)
        result = dict(reply)
        for noise in SELECT_BOOKKEEPING:
            result.pop(noise, None)
        blocks = []
        shown: list[dict[str, object]] = []
        for entry in reply["selected"]:
            try:
                memory: str | None = memory_text(entry["path"])
            except OSError:
                memory = None
            shown.append({**entry, "text": memory})
            blocks.append(memory_block(entry, memory or "(unreadable now)"))
        result["selected"] = shown
        if not blocks:
            text = reply.get("note") or "No memory clearly helps with this; do not ask again."
        else:
            text = f"{len(blocks)} memor{'y' if len(blocks) == 1 else 'ies'}:\n" + "".join(blocks)
        if state is not None and reply["selected"]:
            # Recorded as it goes out: the next ask (hook or tool) does not repeat it.
            state.record([e["path"] for e in reply["selected"]])
        return result, text

    def memory_load_last(self, args: Mapping[str, object]) -> ToolAnswer:
        result: LoadLastReply = self._ask(
            "load_last", {"dir": self._dir(args), "project": args["project"]}
        )
        if not result.get("found"):
            return result, str(result.get("message") or "no session memory found")
        return result, f"{result['resume_line']}\nFile: {result['path']}\n\n{result['content']}"

    def memory_save(self, args: Mapping[str, object]) -> ToolAnswer:
        result: SaveResult = self._ask("save", {**args, "dir": self._dir(args)})
        how = "new file" if result.get("created") else "updated"
        return result, f"Saved {result['path']} ({how})."

    def memory_context(self, args: Mapping[str, object]) -> ToolAnswer:
        dirs = [self._dir(args), *_listed(args.get("more_dirs"))]
        params = {
            "task": args["task"],
            "dir": dirs,
            "project": args.get("project"),
            "budget_tokens": args.get("budget_tokens"),
        }
        result: ContextReply = self._ask("context", params)
        return result, str(result["text"])

    def memory_status(self, args: Mapping[str, object]) -> ToolAnswer:
        reply: StatusReply = self._ask("status", {})
        result = dict(reply)
        result.pop("capabilities", None)  # for programs that talk to the socket, not the model
        result["client_socket"] = self._client.describe()
        roots = reply.get("roots") or []
        files = sum(int(r.get("files") or 0) for r in roots)
        text = (
            f"memoryd {reply.get('version')} {reply.get('state')} (pid {reply.get('pid')}): "
            f"{len(roots)} watched folder{'' if len(roots) == 1 else 's'}, {files} files; "
            f"socket {self._client.socket_path} (chosen by {self._client.socket_reason})"
        )
        return result, text

    def memory_why(self, args: Mapping[str, object]) -> ToolAnswer:
        """Read the daemon's index read-only (its path from ``status``) and the transcript."""
        from memoryd.indexer.store import open_reader  # noqa: PLC0415 - this tool only
        from memoryd.integrations import why  # noqa: PLC0415

        directory = os.path.realpath(self._dir(args))
        try:
            db = self._ask("status", {}).get("db")
        except ToolError:
            db = None
        session = cast("str | None", args.get("session_id")) or self._session
        try:
            conn = open_reader(why.db_of(None, db))
            try:
                report = why.explain(
                    conn, directory, session=session, last=cast("int", args.get("last") or 5)
                )
            finally:
                conn.close()
        except MemorydError as exc:
            raise ToolError(f"memory_why: {exc}") from None
        return report, why.render(report)


def _listed(value: object) -> list[object]:
    """An optional list argument (its items are the daemon's to check)."""
    return list(cast("Iterable[object]", value or []))


def _check(schema: ObjectSchema, args: object) -> Mapping[str, object]:
    """The argument object's shape (required names, no unknown ones); the daemon checks values."""
    if not isinstance(args, dict):
        raise ToolError("arguments must be a JSON object")
    known = schema["properties"]
    unknown = sorted(set(args) - set(known))
    if unknown:
        raise ToolError(
            f"unknown argument(s): {', '.join(unknown)} (known: {', '.join(sorted(known))})"
        )
    missing = [name for name in schema["required"] if args.get(name) is None]
    if missing:
        raise ToolError(f"missing required argument(s): {', '.join(missing)}")
    return args


class StdioServer:
    """One MCP session on a pair of byte streams, one message per line."""

    def __init__(self, tools: MemoryTools, reader: IO[bytes], writer: IO[bytes]) -> None:
        self.tools = tools
        self.reader = reader
        self.writer = writer

    def serve(self) -> None:
        """Answer messages until the client closes the stream."""
        for line in self.reader:
            if not line.strip():
                continue
            reply = self.handle_line(line)
            if reply is not None:
                self.writer.write(json.dumps(reply, ensure_ascii=False).encode("utf-8") + b"\n")
                self.writer.flush()

    def handle_line(self, line: bytes) -> RpcResult | RpcFailure | None:
        try:
            message = json.loads(line)
        except ValueError as exc:
            return _error(None, PARSE_ERROR, f"not valid JSON: {exc}")
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return _error(None, INVALID_REQUEST, "not a JSON-RPC 2.0 object (batches unsupported)")
        if "method" not in message:
            return None  # a response to a request we never send
        method, params, msg_id = message["method"], message.get("params") or {}, message.get("id")
        if "id" not in message:
            return None  # a notification: initialized, cancelled, ...
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

    def call_tool(self, params: Mapping[str, object]) -> ToolCallResult:
        name = params.get("name")
        if name not in BY_NAME:
            raise _RpcError(INVALID_PARAMS, f"unknown tool: {name!r}")
        args = params.get("arguments")
        try:
            structured, text = self.tools.call(str(name), {} if args is None else args)
        except ToolError as exc:
            return {"content": [{"type": "text", "text": str(exc)}], "isError": True}
        return {
            "content": [{"type": "text", "text": text}],
            "structuredContent": structured,
            "isError": False,
        }


class _RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def _error(msg_id: object, code: int, message: str) -> RpcFailure:
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


def serve(socket: Path | None = None) -> None:
    """Serve MCP on stdin/stdout until the client closes the stream."""
    tools = MemoryTools(socket, os.environ)
    try:
        StdioServer(tools, sys.stdin.buffer, sys.stdout.buffer).serve()
    finally:
        tools.close()
