"""The judge on Anthropic's Messages API: one structured-output call, the system prompt
cached."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import anthropic
from anthropic.types import OutputConfigParam, TextBlockParam

from memoryd.config import DEFAULT_MODEL
from memoryd.select.judge import (
    OUTPUT_SCHEMA,
    SYSTEM_PROMPT,
    Judge,
    JudgeOutcome,
    count,
    error_detail,
)

_OUTPUT: OutputConfigParam = {"format": {"type": "json_schema", "schema": dict(OUTPUT_SCHEMA)}}
_SYSTEM: list[TextBlockParam] = [
    {"type": "text", "text": SYSTEM_PROMPT, "cache_control": {"type": "ephemeral"}}
]
_STOPS = {
    "refusal": "refusal",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
}


@dataclass(frozen=True, slots=True)
class ClaudeSettings:
    """How to reach the API; ``api_key`` is hidden from ``repr``."""

    api_key: str = field(repr=False)
    model: str = DEFAULT_MODEL
    base_url: str | None = None
    timeout_s: float = 5.0
    max_retries: int = 1
    max_tokens: int = 256


class ClaudeJudge(Judge):
    """The judge as one Messages API call (one thread-safe SDK client)."""

    name = "anthropic"

    def __init__(self, settings: ClaudeSettings) -> None:
        if not settings.api_key:  # else the SDK looks for credentials elsewhere
            raise ValueError("ClaudeSettings.api_key is empty")
        super().__init__(settings.api_key, settings.timeout_s)
        self.settings = settings
        self._client = anthropic.Anthropic(
            api_key=settings.api_key,
            base_url=settings.base_url,
            timeout=settings.timeout_s,
            max_retries=settings.max_retries,
        )

    def close(self) -> None:
        self._client.close()

    def ask(self, message: str) -> JudgeOutcome:
        try:
            reply: Any = self._client.messages.create(
                model=self.settings.model,
                max_tokens=self.settings.max_tokens,
                system=_SYSTEM,
                messages=[{"role": "user", "content": message}],
                output_config=_OUTPUT,
            )
        except anthropic.APITimeoutError:
            raise self.timed_out() from None
        except anthropic.APIConnectionError:
            raise self.fail("connection", "could not connect to the Anthropic API") from None
        except anthropic.APIStatusError as exc:  # its message quotes the raw body: not chained
            status = exc.status_code
            raise self.fail(f"http_{status}", f"HTTP {status}{error_detail(exc.body)}") from None
        except anthropic.AnthropicError as exc:  # e.g. a 2xx body the SDK could not decode
            raise self.fail("invalid_json", f"unexpected reply ({type(exc).__name__})") from None
        usage = getattr(reply, "usage", None)
        inputs = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
        tokens = sum(count(getattr(usage, k, 0)) for k in inputs)
        tokens_out = count(getattr(usage, "output_tokens", 0))
        blocks = getattr(reply, "content", None) or []
        text = "".join(b.text for b in blocks if isinstance(getattr(b, "text", None), str))
        stop = _STOPS.get(getattr(reply, "stop_reason", None) or "")
        return self.answer(text, stop, (tokens, tokens_out))
