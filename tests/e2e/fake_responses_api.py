"""A scriptable stand-in for the OpenAI Responses API (what Codex speaks), over real HTTP.

It listens on 127.0.0.1, answers ``POST /v1/responses`` with the stream of
server-sent events Codex reads (``response.created``, one
``response.output_item.done`` per output item, ``response.completed``) and
records every request body. What the model "says" comes from ``choose(body)``,
a function of the request: a list of output items, made with :func:`message`
and :func:`function_call`. Anything else (another path, a ``GET``, a proxy
``CONNECT``) is refused and recorded in :attr:`FakeResponsesAPI.strays`, so a
test can prove nothing tried to leave the machine.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Item = dict[str, Any]
Choose = Callable[[dict[str, Any]], list[Item]]


def message(text: str) -> Item:
    """An assistant message holding ``text``."""
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
    }


def function_call(name: str, arguments: dict[str, Any], call_id: str = "call_fake_1") -> Item:
    """The model calling tool ``name`` with ``arguments``."""
    return {
        "type": "function_call",
        "name": name,
        "arguments": json.dumps(arguments),
        "call_id": call_id,
    }


class FakeResponsesAPI:
    """A threaded HTTP server answering each Responses request with ``choose(request)``."""

    def __init__(self, choose: Choose) -> None:
        self._lock = threading.Lock()
        self._choose = choose
        self._requests: list[dict[str, Any]] = []
        self._strays: list[str] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def origin(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeResponsesAPI:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._thread.join(timeout=5)
        self._server.server_close()

    def respond(self, choose: Choose) -> None:
        with self._lock:
            self._choose = choose

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every ``/v1/responses`` request body, oldest first."""
        with self._lock:
            return list(self._requests)

    @property
    def strays(self) -> list[str]:
        """Every request that was not a Responses call (``METHOD path``), refused."""
        with self._lock:
            return list(self._strays)

    def _answer(self, body: dict[str, Any]) -> list[Item]:
        with self._lock:
            self._requests.append(body)
            choose = self._choose
        return choose(body)

    def _stray(self, what: str) -> None:
        with self._lock:
            self._strays.append(what)


def _handler(api: FakeResponsesAPI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            """Keep pytest output quiet."""

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            if self.path.split("?")[0] != "/v1/responses":
                api._stray(f"POST {self.path}")
                self._send(404, "application/json", b'{"error": {"message": "no such route"}}')
                return
            body = json.loads(raw)
            n = len(api.requests)
            items = api._answer(body)
            events: list[dict[str, Any]] = [
                {"type": "response.created", "response": {"id": f"resp_fake_{n}"}}
            ]
            events += [{"type": "response.output_item.done", "item": item} for item in items]
            usage = {"input_tokens": len(raw) // 4, "output_tokens": 10, "total_tokens": 0}
            usage["total_tokens"] = usage["input_tokens"] + 10
            events.append(
                {"type": "response.completed", "response": {"id": f"resp_fake_{n}", "usage": usage}}
            )
            data = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._send(200, "text/event-stream", data.encode())

        def do_GET(self) -> None:
            api._stray(f"GET {self.path}")
            self._send(404, "application/json", b'{"error": {"message": "no such route"}}')

        def do_CONNECT(self) -> None:
            api._stray(f"CONNECT {self.path}")
            self._send(403, "text/plain", b"")

        def _send(self, status: int, kind: str, data: bytes) -> None:
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()

    return Handler
