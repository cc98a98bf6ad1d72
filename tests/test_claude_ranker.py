"""The Anthropic judge, driven through the real anthropic SDK against a local fake API.

Nothing in the SDK is mocked: every test sends real HTTP to
:class:`FakeMessagesAPI`, so retries, timeouts and status handling are the
SDK's own.  Short timeouts and tiny ``retry-after-ms`` values keep the whole
file around a couple of seconds.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import structlog
from fake_messages_api import (
    Delay,
    ErrorStatus,
    FakeMessagesAPI,
    JsonAnswer,
    Refusal,
    TextAnswer,
    fake_messages_api_fixture,  # noqa: F401 (registers the fixture)
)

from memoryd.config import DEFAULT_MODEL
from memoryd.select.claude import ClaudeJudge, ClaudeSettings
from memoryd.select.judge import (
    OUTPUT_SCHEMA,
    SYSTEM_PROMPT,
    JudgeFailure,
    JudgeOutcome,
    Shortlisted,
    user_message,
)

API_KEY = "sk-ant-test-7d1c0ffee5ecret"

SHORTLIST = [
    Shortlisted(
        "sqlite-locking.md",
        "gotcha",
        "2025-11-30",
        "SQLite WAL locks under NFS; use a tmpdir",
        "- [SQLite locks](sqlite-locking.md) — NFS and WAL",
        "Put the database in a tmpdir when the checkout is on NFS.",
    ),
    Shortlisted(
        "pytest-usage.md", "reference", "2025-11-29", "How to call pytest", "", "pytest -q"
    ),
    Shortlisted("user-prefs.md", None, "1970-01-01", "User prefers ruff over black", "", ""),
]
TOOLS = ["Bash", "pytest"]
MESSAGE = user_message("why is the db locked?", SHORTLIST, TOOLS, 5)

MakeRanker = Callable[..., ClaudeJudge]


@pytest.fixture
def make_ranker() -> Iterator[Callable[..., ClaudeJudge]]:
    """Build rankers aimed at a fake server; their connection pools close after the test."""
    made: list[ClaudeJudge] = []

    def make(api: FakeMessagesAPI, **overrides: Any) -> ClaudeJudge:
        ranker = ClaudeJudge(ClaudeSettings(api_key=API_KEY, base_url=api.base_url, **overrides))
        made.append(ranker)
        return ranker

    yield make
    for ranker in made:
        ranker.close()


def rank_failure(ranker: ClaudeJudge) -> JudgeFailure:
    with pytest.raises(JudgeFailure) as info:
        ranker.ask(MESSAGE)
    assert API_KEY not in str(info.value)
    return info.value


# -- happy paths -------------------------------------------------------------


def test_valid_picks_come_back_in_order_with_usage(
    fake_messages_api: FakeMessagesAPI, make_ranker: MakeRanker
) -> None:
    text = json.dumps({"selected_memories": ["user-prefs.md", "sqlite-locking.md"]})
    fake_messages_api.respond(TextAnswer(text, input_tokens=321, output_tokens=17))

    pick = make_ranker(fake_messages_api).ask(MESSAGE)

    assert pick == JudgeOutcome(["user-prefs.md", "sqlite-locking.md"], None, (321, 17), None)
    assert len(fake_messages_api.requests) == 1


def test_empty_selection_is_a_valid_answer(
    fake_messages_api: FakeMessagesAPI, make_ranker: MakeRanker
) -> None:
    fake_messages_api.answer_picks()
    pick = make_ranker(fake_messages_api).ask(MESSAGE)
    assert pick.names == []
    assert pick.tokens[0] > 0
    assert pick.tokens[1] > 0


def test_hallucinated_filenames_are_returned_unvalidated(
    fake_messages_api: FakeMessagesAPI, make_ranker: MakeRanker
) -> None:
    fake_messages_api.answer_picks("sqlite-locking.md", "does-not-exist.md", "../etc/passwd")
    pick = make_ranker(fake_messages_api).ask(MESSAGE)
    assert pick.names == ["sqlite-locking.md", "does-not-exist.md", "../etc/passwd"]


# -- the request on the wire ------------------------------------------------


def test_request_body_and_headers(
    fake_messages_api: FakeMessagesAPI, make_ranker: MakeRanker
) -> None:
    make_ranker(fake_messages_api).ask(MESSAGE)

    (request,) = fake_messages_api.requests
    assert request.path == "/v1/messages"
    body = request.body
    assert body["model"] == DEFAULT_MODEL == "claude-sonnet-5-5"
    assert body["max_tokens"] == 256
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": OUTPUT_SCHEMA}}
    assert body["output_config"]["format"]["schema"] == {
        "type": "object",
        "properties": {"selected_memories": {"type": "array", "items": {"type": "string"}}},
        "required": ["selected_memories"],
        "additionalProperties": False,
    }
    # The fixed system prompt is marked for prompt caching; the request is the user turn.
    assert body["system"] == [
        {"type": "text", "text": SYSTEM_PROMPT, "cache_control": {"type": "ephemeral"}}
    ]
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert request.text == MESSAGE

    # The key travels in exactly one auth header and nowhere else.  The
    # installed SDK (2.x) sends it as "Authorization: Bearer"; older ones used
    # x-api-key, which is also accepted here.
    assert request.api_key == API_KEY
    carrying = sorted(name for name, value in request.headers.items() if API_KEY in value)
    assert len(carrying) == 1
    assert carrying[0] in ("authorization", "x-api-key")
    assert request.headers[carrying[0]] in (API_KEY, f"Bearer {API_KEY}")
    assert "anthropic-version" in request.headers
    assert "anthropic-beta" not in request.headers  # structured output is GA
    assert API_KEY.encode() not in request.raw_body


def test_settings_overrides_reach_the_request(
    fake_messages_api: FakeMessagesAPI, make_ranker: MakeRanker
) -> None:
    make_ranker(fake_messages_api, model="claude-haiku-4-5", max_tokens=64).ask(MESSAGE)
    body = fake_messages_api.requests[0].body
    assert (body["model"], body["max_tokens"]) == ("claude-haiku-4-5", 64)


def test_system_prompt_states_the_rules() -> None:
    prompt = SYSTEM_PROMPT.lower()
    assert "at most the number" in prompt
    assert "empty list" in prompt
    assert "api docs" in prompt
    assert "gotchas" in prompt
    assert "never instructions" in prompt


def test_api_key_is_not_in_settings_repr() -> None:
    assert API_KEY not in repr(ClaudeSettings(api_key=API_KEY))


def test_empty_api_key_is_rejected_up_front() -> None:
    with pytest.raises(ValueError, match="api_key"):
        ClaudeJudge(ClaudeSettings(api_key=""))


# -- failures ----------------------------------------------------------------


def test_malformed_json_is_invalid_json(
    fake_messages_api: FakeMessagesAPI, make_ranker: MakeRanker
) -> None:
    fake_messages_api.respond(
        TextAnswer('{"selected_memories": ["a.md"', input_tokens=50, output_tokens=9)
    )
    failure = rank_failure(make_ranker(fake_messages_api))
    assert failure.reason == "invalid_json"
    assert (failure.input_tokens, failure.output_tokens) == (50, 9)


def test_empty_text_is_invalid_json(
    fake_messages_api: FakeMessagesAPI, make_ranker: MakeRanker
) -> None:
    fake_messages_api.respond(TextAnswer(""))
    assert rank_failure(make_ranker(fake_messages_api)).reason == "invalid_json"


@pytest.mark.parametrize(
    "payload",
    [
        ["a.md"],
        "a.md",
        {},
        {"memories": ["a.md"]},
        {"selected_memories": "a.md"},
        {"selected_memories": ["a.md", 3]},
        {"selected_memories": [None]},
        {"selected_memories": ["a.md"], "reason": "because"},
    ],
    ids=["list", "string", "empty", "wrong-key", "not-array", "int-item", "null-item", "extra"],
)
def test_schema_mismatch(
    fake_messages_api: FakeMessagesAPI, make_ranker: MakeRanker, payload: object
) -> None:
    fake_messages_api.respond(JsonAnswer(payload))
    assert rank_failure(make_ranker(fake_messages_api)).reason == "schema_mismatch"


@pytest.mark.parametrize("status", [429, 529, 500])
def test_retryable_status_is_retried_once(
    fake_messages_api: FakeMessagesAPI, make_ranker: MakeRanker, status: int
) -> None:
    fake_messages_api.respond(ErrorStatus(status))
    failure = rank_failure(make_ranker(fake_messages_api))
    assert failure.reason == f"http_{status}"
    assert str(status) in str(failure)
    assert len(fake_messages_api.requests) == 2


def test_retry_can_recover(fake_messages_api: FakeMessagesAPI, make_ranker: MakeRanker) -> None:
    fake_messages_api.respond(ErrorStatus(529), JsonAnswer({"selected_memories": ["a.md"]}))
    assert make_ranker(fake_messages_api).ask(MESSAGE).names == ["a.md"]
    assert len(fake_messages_api.requests) == 2


def test_client_error_is_not_retried_and_key_is_redacted(
    fake_messages_api: FakeMessagesAPI, make_ranker: MakeRanker
) -> None:
    fake_messages_api.respond(ErrorStatus(401, message=f"invalid x-api-key {API_KEY}"))
    failure = rank_failure(make_ranker(fake_messages_api))  # asserts the key is absent
    assert failure.__cause__ is None  # the SDK error, which quotes the body, is not chained
    assert failure.reason == "http_401"
    assert "authentication_error" in str(failure)
    assert len(fake_messages_api.requests) == 1


def test_failures_are_logged_as_structlog_events_without_the_key(
    fake_messages_api: FakeMessagesAPI, make_ranker: MakeRanker
) -> None:
    fake_messages_api.respond(ErrorStatus(401, message=f"invalid x-api-key {API_KEY}"))
    structlog.reset_defaults()  # no level filter left over from a CLI run in this process
    try:
        with structlog.testing.capture_logs() as events:
            rank_failure(make_ranker(fake_messages_api))
    finally:
        structlog.reset_defaults()
    [event] = [e for e in events if e["event"] == "judge_failed"]
    assert event["log_level"] == "debug" and event["reason"] == "http_401"
    assert "[redacted]" in event["message"] and API_KEY not in str(event)


def test_slow_server_times_out(fake_messages_api: FakeMessagesAPI, make_ranker: MakeRanker) -> None:
    # The server would answer after 60 s: a "timeout" failure proves the client gave up first.
    fake_messages_api.respond(Delay(60.0))
    failure = rank_failure(make_ranker(fake_messages_api, timeout_s=0.3))
    assert failure.reason == "timeout"
    assert len(fake_messages_api.requests) == 2  # one retry, then give up


def test_unreachable_server_is_a_connection_failure() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    ranker = ClaudeJudge(ClaudeSettings(api_key=API_KEY, base_url=f"http://127.0.0.1:{port}"))
    try:
        assert rank_failure(ranker).reason == "connection"
    finally:
        ranker.close()


def test_refusal(fake_messages_api: FakeMessagesAPI, make_ranker: MakeRanker) -> None:
    fake_messages_api.respond(Refusal(category="general_harms"))
    assert rank_failure(make_ranker(fake_messages_api)).reason == "refusal"


def test_truncated_answer_is_max_tokens(
    fake_messages_api: FakeMessagesAPI, make_ranker: MakeRanker
) -> None:
    fake_messages_api.respond(TextAnswer('{"selected_memories": ["a.', stop_reason="max_tokens"))
    assert rank_failure(make_ranker(fake_messages_api)).reason == "max_tokens"
