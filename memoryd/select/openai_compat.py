"""The judge on any OpenAI-compatible chat-completions endpoint (Ollama, llama.cpp, vLLM, ...).

One call asking for a JSON-schema ``response_format``; a server that refuses it
(HTTP 400 or 422) is asked again without it, and never with it again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx2 as httpx

from memoryd.select.judge import (
    OUTPUT_SCHEMA,
    SYSTEM_PROMPT,
    Judge,
    JudgeOutcome,
    count,
    error_detail,
    log,
)

_RESPONSE_FORMAT = {
    "type": "json_schema",
    "json_schema": {"name": "memory_selection", "strict": True, "schema": OUTPUT_SCHEMA},
}
_FORMAT_REFUSED = (400, 422)


@dataclass(frozen=True, slots=True)
class OpenAISettings:
    """Where the endpoint is; ``api_key`` (local servers need none) is hidden from ``repr``."""

    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 5.0
    max_tokens: int = 256


class OpenAIJudge(Judge):
    """The judge as one chat-completions call (one thread-safe httpx client)."""

    name = "openai"
    lenient = True

    def __init__(self, settings: OpenAISettings) -> None:
        super().__init__(settings.api_key, settings.timeout_s)
        self.settings = settings
        headers = {"authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
        self._client = httpx.Client(timeout=settings.timeout_s, headers=headers)
        self._url = settings.base_url.rstrip("/") + "/chat/completions"
        self._schema = True  # a bool written once: no lock needed

    def close(self) -> None:
        self._client.close()

    def ask(self, message: str) -> JudgeOutcome:
        body: dict[str, Any] = {
            "model": self.settings.model,
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": message},
            ],
            "temperature": 0,
            "max_tokens": self.settings.max_tokens,
        }
        schema = self._schema
        response = self._post(body | {"response_format": _RESPONSE_FORMAT} if schema else body)
        if schema and response.status_code in _FORMAT_REFUSED:
            log.info("judge_response_format_refused", status=response.status_code)
            self._schema = False
            response = self._post(body)
        try:
            reply = response.json()
        except ValueError:
            reply = None
        status = response.status_code
        if status >= 400:
            raise self.fail(f"http_{status}", f"HTTP {status}{error_detail(reply)}")
        if not isinstance(reply, dict):
            raise self.fail("invalid_json", "the server's reply is not a JSON object")
        usage = reply.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        tokens = (count(usage.get("prompt_tokens")), count(usage.get("completion_tokens")))
        choices = reply.get("choices")
        first = choices[0] if isinstance(choices, list) and choices else None
        first = first if isinstance(first, dict) else {}
        msg = first.get("message")
        msg = msg if isinstance(msg, dict) else {}
        finish = first.get("finish_reason")
        refused = msg.get("refusal") or finish == "content_filter"
        stop = "refusal" if refused else "max_tokens" if finish == "length" else None
        return self.answer(msg.get("content"), stop, tokens)

    # dict[str, Any]: a JSON request body.
    def _post(self, body: dict[str, Any]) -> httpx.Response:
        try:
            return self._client.post(self._url, json=body)
        except httpx.TimeoutException:
            raise self.timed_out() from None
        except httpx.HTTPError:
            raise self.fail("connection", f"could not reach {self._url}") from None
