"""The service and the selector in-process: typed requests, the run log, no daemon.

:class:`MemoryService` is what the socket handlers call; here it runs over a
real SQLite index through a :class:`SyncedIndex` (no watching, no writer
thread), so the telemetry contract (one row per run,
failures included) and the typed request's error messages are checked in
milliseconds instead of through a daemon subprocess.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import MakeMemory
from synced_index import SyncedIndex

from memoryd.errors import InvalidParams
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.methods import Select, handler
from memoryd.methods import Select as SelectRequest
from memoryd.params import decode
from memoryd.replies import SelectResult
from memoryd.select.selector import Selector
from memoryd.service import MemoryService

QUERY = "how do I run the fast pytest subset?"


def call(service: MemoryService, method: str, params: dict[str, Any]) -> Any:
    """``method`` answered as the daemon answers it: the params decoded, then its handler."""
    entry = handler(service, method)
    assert entry is not None
    return entry(params)


def run_select(index: SyncedIndex, params: dict[str, Any]) -> SelectResult:
    answer = handler(MemoryService(index, Selector()), "select")
    assert answer is not None
    result: SelectResult = answer(params)
    return result


@pytest.fixture
def folder(memdir: Path, make_memory: MakeMemory) -> Path:
    make_memory("reference_pytest.md", "Run the fast pytest subset with -m 'not slow'")
    make_memory("project_billing.md", "Invoices post to the ledger nightly", type="project")
    return memdir


def test_a_run_returns_the_documented_reply_and_records_it_once(
    store: IndexStore, folder: Path
) -> None:
    index = SyncedIndex(store)
    result = run_select(index, {"query": QUERY, "dir": str(folder), "ranker": "local"})
    assert list(result) == [
        "run_id",
        "ranker",
        "selected",
        "candidates",
        "excluded",
        "dropped_unknown",
        "fallback",
        "note",
        "memory_folder",
        "latency_ms",
    ]
    assert [s["filename"] for s in result["selected"]] == ["reference_pytest.md"]
    (run,) = index.runs
    assert run["run_id"] == result["run_id"] and run["dir"] == str(folder.resolve())
    assert json.loads(run["selected_json"]) == ["reference_pytest.md"]
    assert (run["error"], run["tokens_in"], run["tokens_out"]) == (None, 0, 0)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"dir": "."}, "'query' is required"),
        ({"query": " ", "dir": "."}, "'query' must not be empty"),
        ({"query": QUERY}, "'dir' must be a directory path"),
        ({"query": QUERY, "dir": ".", "limit": 6}, "'limit' must be an integer from 1 to 5"),
        ({"query": QUERY, "dir": ".", "ranker": "gpt"}, "'ranker' must be one of: auto, local"),
        ({"query": QUERY, "dir": ".", "colour": 1}, "unknown parameter(s): colour"),
    ],
)
def test_a_refused_request_is_recorded_with_its_error(
    store: IndexStore, params: dict[str, Any], message: str
) -> None:
    index = SyncedIndex(store)
    with pytest.raises(InvalidParams) as err:
        run_select(index, params)
    assert str(err.value).startswith(message)
    (run,) = index.runs
    assert (run["error"], run["dir"], run["selected_json"]) == ("invalid_params", None, "[]")


def test_a_missing_directory_is_refused_after_parsing_and_recorded(
    store: IndexStore, tmp_path: Path
) -> None:
    index = SyncedIndex(store)
    with pytest.raises(InvalidParams, match="memory directory not found"):
        run_select(index, {"query": QUERY, "dir": str(tmp_path / "nope")})
    assert [r["error"] for r in index.runs] == ["invalid_params"]


def test_the_selector_alone_needs_no_callbacks_and_keeps_no_session_record(
    store: IndexStore, folder: Path
) -> None:
    """What a session was shown is the client's record: the daemon cannot know it was delivered."""
    Syncer(store).sync_tree(str(folder))
    selector = Selector()
    req = SelectRequest(query=QUERY, dir=str(folder), session_id="s1", ranker="local")
    first = selector.run(store.conn, req, str(folder), "r1")
    again = selector.run(store.conn, req, str(folder), "r2")
    assert [s["filename"] for s in first.result["selected"]] == ["reference_pytest.md"]
    assert first.tokens == (0, 0) and "_tokens" not in first.result
    # An answer the client may never have delivered does not hide the memory next time.
    assert again.result["selected"] == first.result["selected"]
    # The client's own record does, and nothing weaker stands in.
    shown = SelectRequest(
        query=QUERY, dir=str(folder), surfaced=("reference_pytest.md",), ranker="local"
    )
    third = selector.run(store.conn, shown, str(folder), "r3")
    assert third.result["selected"] == [] and third.result["excluded"]["surfaced"] == 1
    assert (
        decode(Select, {"query": QUERY, "dir": str(folder), "session_id": "s1", "ranker": "local"})
        == req
    )


def test_list_goes_through_the_same_service(store: IndexStore, folder: Path) -> None:
    service = MemoryService(SyncedIndex(store), Selector())
    listing = call(service, "list", {"dir": str(folder)})
    assert [f["filename"] for f in listing["files"]] == [
        "project_billing.md",
        "reference_pytest.md",
    ]
    assert listing["dir"] == str(folder.resolve()) and listing["errors"] == []
    with pytest.raises(InvalidParams, match=r"unknown parameter\(s\): depth"):
        call(service, "list", {"dir": str(folder), "depth": 2})
