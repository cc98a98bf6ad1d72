"""A scriptable stand-in for the Anthropic Messages API, served over real HTTP.

Why a real server instead of mocking the SDK: the ranker's failure handling
depends on what the SDK actually does with status codes, retry headers, read
timeouts and odd response bodies.  Pointing the real ``anthropic`` client at
this server (``base_url=server.base_url``) exercises all of that end to end, and
the same server can back a real daemon process in integration tests.

The server listens on 127.0.0.1 with an ephemeral port, answers
``POST /v1/messages`` (as JSON, or as a stream of server-sent events when the
request asks for ``stream``, as Claude Code does) and
``POST /v1/messages/count_tokens``, and records every request (headers and JSON
body).  A scripted tool call is answered only when the request makes that
tool callable: listed and, when deferred (``defer_loading``), loaded by a
tool search's ``tool_reference`` (else 400, as the API does).  Each
incoming messages request consumes the next scripted :data:`Behaviour`;
once the script runs out, the last behaviour keeps repeating, so
``respond(ErrorStatus(429))`` means "always 429";
:class:`Dynamic` decides from the request itself.  Pointed at as an HTTP(S)
proxy, it refuses every ``CONNECT`` and records the host in :attr:`connects`,
so a test can prove nothing tried to leave the machine.

Use the ``fake_messages_api`` fixture (defined by :func:`fake_messages_api_fixture`)
or ``with FakeMessagesAPI() as api:``::

    api.respond(JsonAnswer({"selected_memories": ["a.md"]}))
    client = anthropic.Anthropic(api_key="k", base_url=api.base_url)
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeAlias

import pytest

__all__ = [
    "Behaviour",
    "Delay",
    "Dynamic",
    "ErrorStatus",
    "FakeMessagesAPI",
    "JsonAnswer",
    "RecordedRequest",
    "Refusal",
    "TextAnswer",
    "ToolUse",
    "fake_messages_api_fixture",
]

# Error "type" strings the real API uses for each status, so SDK error
# messages look like production ones.
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


@dataclass(frozen=True, slots=True)
class TextAnswer:
    """Reply 200 with one text block holding ``text`` verbatim (may be malformed JSON)."""

    text: str
    stop_reason: str = "end_turn"
    input_tokens: int | None = None  # None: estimated from the request size
    output_tokens: int | None = None  # None: estimated from the text length


@dataclass(frozen=True, slots=True)
class JsonAnswer:
    """Reply 200 with ``payload`` serialised as the text block, like structured output."""

    payload: object
    stop_reason: str = "end_turn"


@dataclass(frozen=True, slots=True)
class Refusal:
    """Reply 200 with ``stop_reason: "refusal"``, as when a safety classifier intervenes."""

    text: str = ""
    category: str | None = None


@dataclass(frozen=True, slots=True)
class ErrorStatus:
    """Reply with an HTTP error status and an Anthropic-style ``{"type": "error"}`` body.

    ``retry_after_ms`` is sent as the ``retry-after-ms`` header so the SDK's
    retry sleeps briefly instead of its default half-second backoff; set it to
    None to exercise the SDK's own backoff.
    """

    status: int
    message: str = "scripted failure"
    retry_after_ms: int | None = 10


@dataclass(frozen=True, slots=True)
class Delay:
    """Wait ``seconds`` (interrupted early when the server stops), then do ``then``."""

    seconds: float
    then: Behaviour = field(default_factory=lambda: JsonAnswer({"selected_memories": []}))


@dataclass(frozen=True, slots=True)
class ToolUse:
    """Reply 200 with one ``tool_use`` block (``stop_reason: tool_use``), after optional text."""

    name: str
    input: dict[str, Any]
    text: str = ""


@dataclass(frozen=True, slots=True)
class Dynamic:
    """Play ``choose(request)``: the answer depends on what was asked (e.g. a tool's result)."""

    choose: Callable[[RecordedRequest], Behaviour]


Behaviour: TypeAlias = TextAnswer | JsonAnswer | Refusal | ErrorStatus | Delay | ToolUse | Dynamic


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as the server saw it; header names are lower-cased."""

    method: str
    path: str
    headers: dict[str, str]
    raw_body: bytes
    body: Any  # parsed JSON, or None when the body was not JSON

    @property
    def api_key(self) -> str | None:
        """The credential sent, from ``x-api-key`` or ``Authorization: Bearer``.

        SDK 2.x sends API keys as a bearer token; older SDKs used ``x-api-key``.
        """
        if key := self.headers.get("x-api-key"):
            return key
        scheme, _, token = self.headers.get("authorization", "").partition(" ")
        return token if scheme.lower() == "bearer" and token else None

    @property
    def callable_tools(self) -> set[str]:
        """The tools the model may call: those listed, less deferred ones (``defer_loading``)
        that no tool search has loaded yet (a ``tool_reference`` in a tool result)."""
        tools = self.body.get("tools") or [] if isinstance(self.body, dict) else []
        loaded = {
            ref.get("tool_name")
            for message in self.body.get("messages", [])
            if isinstance(message.get("content"), list)
            for block in message["content"]
            if isinstance(block, dict) and isinstance(block.get("content"), list)
            for ref in block["content"]
            if isinstance(ref, dict) and ref.get("type") == "tool_reference"
        }
        return {t["name"] for t in tools if not t.get("defer_loading") or t["name"] in loaded}

    @property
    def system(self) -> str:
        """The system prompt's text (a string, or the text of its blocks)."""
        system = self.body.get("system", "") if isinstance(self.body, dict) else ""
        if isinstance(system, list):
            return "\n".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
        return str(system)

    @property
    def text(self) -> str:
        """The concatenated text of every user message, for prompt assertions."""
        parts: list[str] = []
        for message in self.body.get("messages", []) if isinstance(self.body, dict) else []:
            content = message.get("content")
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                parts.extend(str(b.get("text", "")) for b in content if isinstance(b, dict))
        return "\n".join(parts)


class FakeMessagesAPI:
    """A threaded HTTP server that plays back a script of :data:`Behaviour` values."""

    def __init__(self, default: Behaviour | None = None) -> None:
        self._lock = threading.Lock()
        self._script: list[Behaviour] = []
        self._last: Behaviour = default or JsonAnswer({"selected_memories": []})
        self._requests: list[RecordedRequest] = []
        self._connects: list[str] = []
        self._stopping = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------

    @property
    def base_url(self) -> str:
        """The URL to pass as the SDK's ``base_url`` (no trailing slash)."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> FakeMessagesAPI:
        """Serve in a background daemon thread; returns self for chaining."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.01},
                name="fake-messages-api",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; pending :class:`Delay` sleeps end at once."""
        self._stopping.set()
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> FakeMessagesAPI:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- scripting and inspection -----------------------------------------

    def respond(self, *behaviours: Behaviour) -> None:
        """Replace the script: one behaviour per request; the last one repeats."""
        if not behaviours:
            raise ValueError("respond() needs at least one behaviour")
        with self._lock:
            self._script = list(behaviours[:-1])
            self._last = behaviours[-1]

    def answer_picks(self, *filenames: str) -> None:
        """Shorthand: every request gets ``{"selected_memories": [...filenames]}``."""
        self.respond(JsonAnswer({"selected_memories": list(filenames)}))

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    @property
    def messages_requests(self) -> list[RecordedRequest]:
        """The ``/v1/messages`` requests only (not ``count_tokens``), oldest first."""
        return [r for r in self.requests if r.path.split("?")[0] == "/v1/messages"]

    @property
    def connects(self) -> list[str]:
        """Every ``CONNECT host:port`` refused while acting as a proxy."""
        with self._lock:
            return list(self._connects)

    def _next(self, recorded: RecordedRequest) -> Behaviour:
        with self._lock:
            self._requests.append(recorded)
            if recorded.path.split("?")[0] != "/v1/messages":
                return self._last  # count_tokens and stray paths keep the script
            behaviour = self._script.pop(0) if self._script else self._last
        while isinstance(behaviour, Dynamic):
            behaviour = behaviour.choose(recorded)
        return behaviour

    def _connected(self, target: str) -> None:
        with self._lock:
            self._connects.append(target)


def _make_handler(api: FakeMessagesAPI) -> type[BaseHTTPRequestHandler]:
    """Build the request handler class bound to one :class:`FakeMessagesAPI`."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in separate writes; without TCP_NODELAY,
        # Nagle plus delayed ACKs add ~40 ms to every keep-alive response.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            """Keep pytest output quiet."""

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            try:
                body: Any = json.loads(raw)
            except ValueError:
                body = None
            recorded = RecordedRequest(
                method="POST",
                path=self.path,
                headers={k.lower(): v for k, v in self.headers.items()},
                raw_body=raw,
                body=body,
            )
            behaviour = api._next(recorded)
            # The client may have given up already (e.g. its timeout fired).
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._play(behaviour, recorded)

        def do_CONNECT(self) -> None:
            """As a proxy: refuse every tunnel, and remember where it was going."""
            api._connected(self.path)
            self.send_response(403)
            self.send_header("content-length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            api._connected(f"GET {self.path}")
            self._send_error(ErrorStatus(404, f"no route for GET {self.path}"))

        def _play(self, behaviour: Behaviour, request: RecordedRequest) -> None:
            route = self.path.split("?")[0]
            if route == "/v1/messages/count_tokens":
                self._send_json(200, {"input_tokens": max(1, len(request.raw_body) // 4)}, {})
                return
            if route != "/v1/messages":
                self._send_error(ErrorStatus(404, f"no route for {self.path}"))
                return
            if not request.api_key or not request.headers.get("anthropic-version"):
                self._send_error(ErrorStatus(401, "missing API key or anthropic-version header"))
                return
            if isinstance(behaviour, Delay):
                if api._stopping.wait(behaviour.seconds):
                    return
                behaviour = behaviour.then
            if isinstance(behaviour, ErrorStatus):
                self._send_error(behaviour)
            elif isinstance(behaviour, JsonAnswer):
                text = json.dumps(behaviour.payload)
                self._send_message(request, TextAnswer(text, behaviour.stop_reason))
            elif isinstance(behaviour, Refusal):
                self._send_message(request, TextAnswer(behaviour.text, "refusal"), behaviour)
            elif isinstance(behaviour, TextAnswer):
                self._send_message(request, behaviour)
            elif isinstance(behaviour, ToolUse):
                if behaviour.name not in request.callable_tools:
                    # As the API: a deferred tool is callable once a tool search loaded it.
                    self._send_error(ErrorStatus(400, f"tool {behaviour.name} is not loaded"))
                    return
                self._send_message(request, TextAnswer(behaviour.text, "tool_use"), tool=behaviour)

        def _send_message(
            self,
            request: RecordedRequest,
            answer: TextAnswer,
            refusal: Refusal | None = None,
            tool: ToolUse | None = None,
        ) -> None:
            model = request.body.get("model") if isinstance(request.body, dict) else None
            input_tokens = answer.input_tokens
            if input_tokens is None:
                input_tokens = max(1, len(request.raw_body) // 4)
            output_tokens = answer.output_tokens
            if output_tokens is None:
                output_tokens = max(1, len(answer.text) // 4)
            content: list[dict[str, Any]] = []
            if answer.text:
                content.append({"type": "text", "text": answer.text})
            if tool is not None:
                tool_id = f"toolu_fake_{len(api.requests):04d}"
                content.append(
                    {"type": "tool_use", "id": tool_id, "name": tool.name, "input": tool.input}
                )
            payload = {
                "id": f"msg_fake_{len(api.requests):04d}",
                "type": "message",
                "role": "assistant",
                "model": model or "unknown",
                "content": content,
                "stop_reason": answer.stop_reason,
                "stop_sequence": None,
                "stop_details": (
                    {"type": "refusal", "category": refusal.category, "explanation": None}
                    if refusal is not None
                    else None
                ),
                "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
            }
            if isinstance(request.body, dict) and request.body.get("stream"):
                self._send_stream(payload)
            else:
                self._send_json(200, payload, {})

        def _send_stream(self, message: dict[str, Any]) -> None:
            """The message as server-sent events, block by block, as the API streams it."""
            start = {**message, "content": [], "stop_reason": None, "stop_details": None}
            start["usage"] = {**message["usage"], "output_tokens": 1}
            events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
            for index, block in enumerate(message["content"]):
                opened: dict[str, Any]
                if block["type"] == "text":
                    opened = {"type": "text", "text": ""}
                    delta = {"type": "text_delta", "text": block["text"]}
                else:
                    opened = {**block, "input": {}}
                    delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
                events += [
                    {"type": "content_block_start", "index": index, "content_block": opened},
                    {"type": "content_block_delta", "index": index, "delta": delta},
                    {"type": "content_block_stop", "index": index},
                ]
            events += [
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                    "usage": {"output_tokens": message["usage"]["output_tokens"]},
                },
                {"type": "message_stop"},
            ]
            data = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
            body = data.encode()
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(body)))
            self.send_header("request-id", "req_fake")
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()

        def _send_error(self, error: ErrorStatus) -> None:
            payload = {
                "type": "error",
                "error": {
                    "type": _ERROR_TYPES.get(error.status, "api_error"),
                    "message": error.message,
                },
                "request_id": "req_fake",
            }
            headers = {}
            if error.retry_after_ms is not None:
                headers["retry-after-ms"] = str(error.retry_after_ms)
            self._send_json(error.status, payload, headers)

        def _send_json(self, status: int, payload: object, headers: dict[str, str]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.send_header("request-id", "req_fake")
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()

    return Handler


@pytest.fixture(name="fake_messages_api")
def fake_messages_api_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeMessagesAPI]:
    """A started :class:`FakeMessagesAPI`, stopped after the test.

    Default behaviour: answer ``{"selected_memories": []}`` to every request.
    Loopback is added to ``NO_PROXY`` (for this process and any daemon it
    spawns) so a developer's HTTP proxy settings cannot intercept the fake.
    """
    for name in ("NO_PROXY", "no_proxy"):
        current = os.environ.get(name, "")
        monkeypatch.setenv(name, ",".join(p for p in (current, "127.0.0.1", "localhost") if p))
    with FakeMessagesAPI() as api:
        yield api
