"""A scriptable OpenAI-compatible chat-completions server, over real HTTP on 127.0.0.1.

It answers ``POST /v1/chat/completions`` as Ollama, llama.cpp's server, vLLM or
OpenAI would, and records every request (headers and JSON body). Each request
consumes the next scripted behaviour; the last one repeats. A behaviour is a
:class:`Reply` (message text, finish reason, refusal, usage), an
:class:`HttpError`, a :class:`Slow` reply, or :class:`NoSchema`: a server that
answers 400 to any ``response_format`` of type ``json_schema`` and plays its
``then`` to a request without one.

Use the ``fake_openai_api`` fixture, or ``with FakeOpenAI() as api:``, and point
the judge at ``api.base_url`` (which ends in ``/v1``, as those servers' do).
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeAlias

import pytest


@dataclass(frozen=True, slots=True)
class Reply:
    """200 with one choice whose message holds ``content`` (which may be prose or bad JSON)."""

    content: str | None
    finish_reason: str = "stop"
    refusal: str | None = None
    usage: dict[str, int] | None = field(
        default_factory=lambda: {"prompt_tokens": 900, "completion_tokens": 12}
    )


def picks(*names: str) -> Reply:
    return Reply(json.dumps({"selected_memories": list(names)}))


@dataclass(frozen=True, slots=True)
class HttpError:
    status: int
    message: str = "scripted failure"


@dataclass(frozen=True, slots=True)
class Slow:
    """Wait ``seconds`` (ended early when the server stops), then play ``then``."""

    seconds: float
    then: Behaviour = field(default_factory=picks)


@dataclass(frozen=True, slots=True)
class NoSchema:
    """Refuse ``response_format: json_schema`` with a 400; play ``then`` otherwise."""

    then: Behaviour


Behaviour: TypeAlias = Reply | HttpError | Slow | NoSchema


@dataclass(frozen=True, slots=True)
class Recorded:
    path: str
    headers: dict[str, str]
    body: Any

    @property
    def user(self) -> str:
        """The user message's text."""
        return "\n".join(m["content"] for m in self.body["messages"] if m["role"] == "user")

    @property
    def system(self) -> str:
        return "\n".join(m["content"] for m in self.body["messages"] if m["role"] == "system")


class FakeOpenAI:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._script: list[Behaviour] = []
        self._last: Behaviour = picks()
        self._requests: list[Recorded] = []
        self._stopping = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> FakeOpenAI:
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stopping.set()
        self._server.shutdown()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server.server_close()

    def respond(self, *behaviours: Behaviour) -> None:
        with self._lock:
            self._script = list(behaviours[:-1])
            self._last = behaviours[-1]

    @property
    def requests(self) -> list[Recorded]:
        with self._lock:
            return list(self._requests)

    def _next(self, recorded: Recorded) -> Behaviour:
        with self._lock:
            self._requests.append(recorded)
            return self._script.pop(0) if self._script else self._last


def _handler(api: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet."""

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            headers = {k.lower(): v for k, v in self.headers.items()}
            recorded = Recorded(self.path, headers, body)
            behaviour = api._next(recorded)
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                if self.path != "/v1/chat/completions" or not isinstance(body, dict):
                    self._send(404, {"error": {"message": f"no route for {self.path}"}})
                else:
                    self._play(behaviour, body)

        def _play(self, behaviour: Behaviour, body: dict[str, Any]) -> None:
            while True:
                if isinstance(behaviour, Slow):
                    if api._stopping.wait(behaviour.seconds):
                        return
                    behaviour = behaviour.then
                elif isinstance(behaviour, NoSchema):
                    if body.get("response_format", {}).get("type") == "json_schema":
                        behaviour = HttpError(400, "response_format json_schema is not supported")
                    else:
                        behaviour = behaviour.then
                else:
                    break
            if isinstance(behaviour, HttpError):
                self._send(behaviour.status, {"error": {"message": behaviour.message}})
                return
            message = {"role": "assistant", "content": behaviour.content}
            if behaviour.refusal is not None:
                message["refusal"] = behaviour.refusal
            reply: dict[str, Any] = {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "model": body.get("model"),
                "choices": [
                    {"index": 0, "message": message, "finish_reason": behaviour.finish_reason}
                ],
            }
            if behaviour.usage is not None:
                reply["usage"] = behaviour.usage
            self._send(200, reply)

        def _send(self, status: int, payload: object) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()

    return Handler


@pytest.fixture(name="fake_openai_api")
def fake_openai_api_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    """A started :class:`FakeOpenAI` (loopback kept out of any proxy), stopped after the test."""
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    with FakeOpenAI() as api:
        yield api
