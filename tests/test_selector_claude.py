"""The selector with the Anthropic judge, in-process: a real index, the real SDK, a local API.

No daemon here: a :class:`MemoryService` runs the :class:`Selector` against a real
SQLite index in a temp dir, its telemetry records land in a list, and the ranker talks HTTP to
:class:`FakeMessagesAPI`. That is enough to check what the ranker is asked,
what is cached and what is billed, and it is much faster than a daemon.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import MakeMemory
from daemon_fixtures import wait_until
from fake_messages_api import Delay, FakeMessagesAPI, JsonAnswer, TextAnswer
from synced_index import SyncedIndex

from memoryd.errors import InvalidParams
from memoryd.indexer.store import IndexStore
from memoryd.methods import Select
from memoryd.params import decode
from memoryd.select.claude import ClaudeJudge, ClaudeSettings
from memoryd.select.selector import Selector
from memoryd.service import MemoryService

QUERY = "how do invoices reach the ledger, and how are their amounts stored?"


class Harness(SyncedIndex):
    """One service over one synced directory, with its telemetry records kept in a list."""

    def __init__(self, store: IndexStore, directory: Path, api: FakeMessagesAPI) -> None:
        super().__init__(store)
        self.folder = str(directory)
        self.records = self.runs
        self.ranker = ClaudeJudge(ClaudeSettings(api_key="sk-test", base_url=api.base_url))
        self.service = MemoryService(self, Selector(judges={"anthropic": lambda: self.ranker}))

    def select(self, query: str = QUERY, **params: Any) -> dict[str, Any]:
        return dict(
            self.service.cmd_select(decode(Select, {"query": query, "dir": self.folder, **params}))
        )


@pytest.fixture
def harness(
    store: IndexStore, memdir: Path, make_memory: MakeMemory, fake_messages_api: FakeMessagesAPI
) -> Iterator[Harness]:
    make_memory("project_ledger.md", "Invoices are posted to the ledger service nightly")
    make_memory("project_currency.md", "Money amounts are integer cents, never floats")
    make_memory("feedback_terse.md", "The user wants terse answers", type="user")
    h = Harness(store, memdir, fake_messages_api)
    yield h
    h.ranker.close()


def offered(api: FakeMessagesAPI, index: int = -1) -> list[str]:
    """The filenames the ranker offered to Claude in one request."""
    text = api.requests[index].text
    return [
        name for name in ("project_ledger.md", "project_currency.md") if f'file="{name}"' in text
    ]


def test_same_question_in_a_session_asks_about_the_remaining_candidates(
    harness: Harness, fake_messages_api: FakeMessagesAPI
) -> None:
    fake_messages_api.respond(
        JsonAnswer({"selected_memories": ["project_ledger.md"]}),
        JsonAnswer({"selected_memories": ["project_currency.md"]}),
    )
    first = harness.select(session_id="s1")
    assert [s["filename"] for s in first["selected"]] == ["project_ledger.md"]

    again = harness.select(session_id="s1", surfaced=["project_ledger.md"])
    # The first pick is surfaced now, so the manifest differs and Claude is asked again.
    assert len(fake_messages_api.requests) == 2
    assert offered(fake_messages_api) == ["project_currency.md"]
    assert [s["filename"] for s in again["selected"]] == ["project_currency.md"]
    assert again["dropped_unknown"] == []
    assert harness.records[-1]["dropped_unknown_json"] == "[]"


def test_identical_manifest_is_answered_from_the_cache(
    harness: Harness, fake_messages_api: FakeMessagesAPI
) -> None:
    fake_messages_api.answer_picks("project_ledger.md")
    harness.select()
    second = harness.select()
    assert len(fake_messages_api.requests) == 1
    assert [s["filename"] for s in second["selected"]] == ["project_ledger.md"]
    # A cached answer costs nothing, so it is recorded as zero tokens.
    assert (harness.records[-1]["tokens_in"], harness.records[-1]["tokens_out"]) == (0, 0)


def test_a_refusal_still_records_the_tokens_it_billed(
    harness: Harness, fake_messages_api: FakeMessagesAPI
) -> None:
    fake_messages_api.respond(
        TextAnswer("", stop_reason="refusal", input_tokens=500, output_tokens=7)
    )
    result = harness.select()
    assert result["ranker"] == "local" and result["fallback"] == "refusal"
    record = harness.records[-1]
    assert (record["tokens_in"], record["tokens_out"]) == (500, 7)
    assert record["fallback"] == "refusal"


def test_a_client_deadline_ends_the_wait_for_claude_and_its_late_answer_is_kept(
    harness: Harness, fake_messages_api: FakeMessagesAPI
) -> None:
    """The hook waits ~2 s: Claude gets what is left of it, the local ranker answers in time."""
    fake_messages_api.respond(Delay(1.5, JsonAnswer({"selected_memories": ["project_ledger.md"]})))
    first = harness.select(timeout_ms=1000)
    # Without the deadline the SDK's own 5 s timeout would end it as "timeout", twice as late.
    assert first["ranker"] == "local" and first["fallback"] == "deadline"
    assert harness.records[-1]["fallback"] == "deadline"
    # The call went on in its worker; its answer is cached for the next ask.
    wait_until(lambda: bool(harness.service.selector.judges._cache), 20, "the late answer")
    again = harness.select(timeout_ms=1000)
    assert again["ranker"] == "anthropic" and again["fallback"] is None
    assert [s["filename"] for s in again["selected"]] == ["project_ledger.md"]
    assert len(fake_messages_api.requests) == 1


def test_a_deadline_too_short_for_claude_does_not_ask_it(
    harness: Harness, fake_messages_api: FakeMessagesAPI
) -> None:
    fake_messages_api.answer_picks("project_ledger.md")
    result = harness.select(timeout_ms=300)
    assert (result["ranker"], result["fallback"]) == ("local", "deadline")
    assert fake_messages_api.requests == []
    with pytest.raises(InvalidParams, match="timeout_ms"):
        harness.select(timeout_ms=0)
