"""The judge on Anthropic's Messages API (the ``anthropic`` SDK).

One call per judgement: the fixed system prompt of :mod:`memoryd.select.judge`,
marked for prompt caching, and the request's user message; the answer is
constrained to :data:`~memoryd.select.judge.OUTPUT_SCHEMA` (structured output).
A short timeout and at most one SDK retry bound the worst case, and every way
the call can fail is one :class:`~memoryd.select.judge.JudgeFailure` with a
stable ``reason``. The API key never appears in messages, reprs or logs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import anthropic
import structlog
from anthropic.types import OutputConfigParam, TextBlockParam

from memoryd.config import DEFAULT_MODEL
from memoryd.select.judge import (
    OUTPUT_SCHEMA,
    SYSTEM_PROMPT,
    JudgeAnswer,
    JudgeFailure,
    parse_answer,
)

log = structlog.get_logger("memoryd.claude")


@dataclass(frozen=True, slots=True)
class ClaudeSettings:
    """How to reach the API.  ``api_key`` is hidden from ``repr`` so it cannot leak into logs."""

    api_key: str = field(repr=False)
    model: str = DEFAULT_MODEL
    base_url: str | None = None
    timeout_s: float = 5.0
    max_retries: int = 1
    max_tokens: int = 256


class ClaudeJudge:
    """The judge as one structured-output Messages API call (one SDK client, thread-safe)."""

    name = "anthropic"

    def __init__(self, settings: ClaudeSettings) -> None:
        if not settings.api_key:
            # The SDK would otherwise go looking for credentials in the
            # environment and profile files, which is not what the caller asked.
            raise ValueError("ClaudeSettings.api_key is empty")
        self._settings = settings
        self._client = anthropic.Anthropic(
            api_key=settings.api_key,
            base_url=settings.base_url,
            timeout=settings.timeout_s,
            max_retries=settings.max_retries,
        )

    @property
    def settings(self) -> ClaudeSettings:
        return self._settings

    def close(self) -> None:
        """Release the HTTP connection pool."""
        self._client.close()

    def ask(self, message: str) -> JudgeAnswer:
        """The model's picks for the user ``message``; :class:`JudgeFailure` on any failure."""
        output_config: OutputConfigParam = {
            "format": {"type": "json_schema", "schema": dict(OUTPUT_SCHEMA)}
        }
        system: list[TextBlockParam] = [
            {"type": "text", "text": SYSTEM_PROMPT, "cache_control": {"type": "ephemeral"}}
        ]
        try:
            reply = self._client.messages.create(
                model=self._settings.model,
                max_tokens=self._settings.max_tokens,
                system=system,
                messages=[{"role": "user", "content": message}],
                output_config=output_config,
            )
        except anthropic.APITimeoutError as exc:
            raise self._failure(
                "timeout", f"the judge's request timed out after {self._settings.timeout_s:g} s"
            ) from exc
        except anthropic.APIConnectionError as exc:
            raise self._failure("connection", "could not connect to the Anthropic API") from exc
        except anthropic.APIStatusError as exc:
            raise self._failure(
                f"http_{exc.status_code}",
                f"the Anthropic API answered HTTP {exc.status_code}{_error_detail(exc.body)}",
            ) from None  # the SDK's message embeds the raw body, which we do not vet
        except anthropic.AnthropicError as exc:
            # e.g. a 2xx body the SDK could not decode at all.
            raise self._failure(
                "invalid_json", f"unexpected response from the API ({type(exc).__name__})"
            ) from None
        return _answer_of(reply)

    def _failure(self, reason: str, message: str) -> JudgeFailure:
        """Build a failure, scrubbing the API key in case a server echoed it."""
        message = message.replace(self._settings.api_key, "[redacted]")
        log.debug("judge_failed", judge=self.name, reason=reason, message=message)
        return JudgeFailure(reason, message)


def _error_detail(body: object) -> str:
    """``": <type>: <message>"`` from an Anthropic error body, or ``""``."""
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            parts = [str(p) for p in (error.get("type"), error.get("message")) if p]
            if parts:
                return ": " + " ".join(": ".join(parts).split())[:200]
    return ""


def _usage(reply: Any) -> tuple[int, int]:
    """Token counts from a response (cache reads included), tolerating a server that omits them."""
    usage = getattr(reply, "usage", None)
    counts = [
        getattr(usage, name, 0)
        for name in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    ]
    out = getattr(usage, "output_tokens", 0)
    return sum(n for n in counts if isinstance(n, int)), out if isinstance(out, int) else 0


def _answer_of(reply: Any) -> JudgeAnswer:
    """Turn a successful HTTP response into picks, or raise the matching failure."""
    inp, out = _usage(reply)
    stop_reason = getattr(reply, "stop_reason", None)
    try:
        if stop_reason == "refusal":
            raise JudgeFailure("refusal", "the model refused to judge the memories")
        if stop_reason in ("max_tokens", "model_context_window_exceeded"):
            raise JudgeFailure("max_tokens", f"the answer was cut off (stop_reason {stop_reason})")
        blocks = getattr(reply, "content", None) or []
        text = "".join(
            b.text for b in blocks if getattr(b, "type", None) == "text" and isinstance(b.text, str)
        )
        return JudgeAnswer(parse_answer(text), inp, out)
    except JudgeFailure as exc:
        exc.input_tokens, exc.output_tokens = inp, out
        raise
