"""The judge on any OpenAI-compatible chat-completions endpoint (Ollama, llama.cpp, vLLM, ...).

One ``POST {base_url}/chat/completions`` per judgement: the fixed
system prompt and the request's user message, asking for
``response_format: {type: json_schema}``, over httpx2 (the HTTP client the
anthropic SDK brings). Servers differ, so the answer is
read leniently: the first JSON object in the reply's text that has
``selected_memories`` (a model may wrap it in prose or a code fence). A server
that refuses the response format (HTTP 400 or 422) is asked again without it,
and from then on never with it. Every failure is one
:class:`~memoryd.select.judge.JudgeFailure`; the API key (optional: local
servers need none) never appears in messages or logs.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import httpx2 as httpx
import structlog

from memoryd.select.judge import (
    OUTPUT_SCHEMA,
    SYSTEM_PROMPT,
    JudgeAnswer,
    JudgeFailure,
    parse_answer,
)

log = structlog.get_logger("memoryd.openai_judge")

_RESPONSE_FORMAT = {
    "type": "json_schema",
    "json_schema": {"name": "memory_selection", "strict": True, "schema": OUTPUT_SCHEMA},
}
_FORMAT_REFUSED = (400, 422)
"""What servers answer to a ``response_format`` they do not support."""


@dataclass(frozen=True, slots=True)
class OpenAISettings:
    """Where the endpoint is; ``api_key`` is hidden from ``repr``."""

    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 5.0
    max_tokens: int = 256


class OpenAIJudge:
    """The judge as one chat-completions call; one httpx client (thread-safe) per judge."""

    name = "openai"

    def __init__(self, settings: OpenAISettings) -> None:
        self._settings = settings
        headers = {"authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
        self._client = httpx.Client(timeout=settings.timeout_s, headers=headers)
        self._url = settings.base_url.rstrip("/") + "/chat/completions"
        self._schema = True
        self._lock = threading.Lock()

    @property
    def settings(self) -> OpenAISettings:
        return self._settings

    def close(self) -> None:
        self._client.close()

    def ask(self, message: str) -> JudgeAnswer:
        """The model's picks for the user ``message``; :class:`JudgeFailure` on any failure."""
        body: dict[str, Any] = {
            "model": self._settings.model,
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": message},
            ],
            "temperature": 0,
            "max_tokens": self._settings.max_tokens,
        }
        with self._lock:
            schema = self._schema
        response = self._post(body | {"response_format": _RESPONSE_FORMAT} if schema else body)
        if schema and response.status_code in _FORMAT_REFUSED:
            log.info("judge_response_format_refused", status=response.status_code)
            with self._lock:
                self._schema = False
            response = self._post(body)
        if response.status_code >= 400:
            raise self._failure(
                f"http_{response.status_code}",
                f"the server answered HTTP {response.status_code}{_detail(response)}",
            )
        try:
            reply = response.json()
        except ValueError:
            raise self._failure("invalid_json", "the server's reply is not JSON") from None
        return _answer_of(reply)

    # dict[str, Any]: a JSON request body, built by _request.
    def _post(self, body: dict[str, Any]) -> httpx.Response:
        try:
            return self._client.post(self._url, json=body)
        except httpx.TimeoutException as exc:
            raise self._failure(
                "timeout", f"the judge's request timed out after {self._settings.timeout_s:g} s"
            ) from exc
        except httpx.HTTPError as exc:
            raise self._failure("connection", f"could not reach {self._url}") from exc

    def _failure(self, reason: str, message: str) -> JudgeFailure:
        if self._settings.api_key:
            message = message.replace(self._settings.api_key, "[redacted]")
        log.debug("judge_failed", judge=self.name, reason=reason, message=message)
        return JudgeFailure(reason, message)


def _detail(response: httpx.Response) -> str:
    """``": <message>"`` from an OpenAI-style error body, or ``""``."""
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        return ""
    text = error.get("message") if isinstance(error, dict) else error
    return ": " + " ".join(str(text).split())[:200] if text else ""


def _answer_of(reply: Any) -> JudgeAnswer:
    usage = reply.get("usage") if isinstance(reply, dict) else None
    usage = usage if isinstance(usage, dict) else {}
    inp, out = (usage.get(k) for k in ("prompt_tokens", "completion_tokens"))
    tokens = (inp if isinstance(inp, int) else 0, out if isinstance(out, int) else 0)
    try:
        choices = reply.get("choices") if isinstance(reply, dict) else None
        first = choices[0] if isinstance(choices, list) and choices else {}
        msg = first.get("message") if isinstance(first, dict) else None
        msg = msg if isinstance(msg, dict) else {}
        if msg.get("refusal") or first.get("finish_reason") == "content_filter":
            raise JudgeFailure("refusal", "the model refused to judge the memories")
        if first.get("finish_reason") == "length":
            raise JudgeFailure("max_tokens", "the answer was cut off (finish_reason length)")
        text = msg.get("content")
        if not isinstance(text, str) or not text.strip():
            raise JudgeFailure("invalid_json", "the reply holds no message text")
        return JudgeAnswer(parse_answer(text, lenient=True), *tokens)
    except JudgeFailure as exc:
        exc.input_tokens, exc.output_tokens = tokens
        raise
