"""``save``, ``load_last``, ``context``, ``report`` and ``check`` through the service, in-process.

Each goes through :func:`memoryd.methods.handler`, as the socket handlers do; here it
runs over a :class:`SyncedIndex` on a real SQLite file in a temp dir (no
daemon process), with an index that
records what the service asked of it, so the seams (a save indexed before
its reply, verdicts written through the index, a refusal before any write)
are checked in milliseconds.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import MakeMemory
from synced_index import SyncedIndex, reporter

from memoryd.config import Config
from memoryd.errors import InvalidParams, NotFound
from memoryd.indexer import queries
from memoryd.indexer.store import IndexStore
from memoryd.methods import LoadLast, Save, handler
from memoryd.params import decode
from memoryd.select.selector import Selector
from memoryd.service import MemoryService
from memoryd.sessions.files import save_request
from memoryd.staleness.checks import Checker

PROJECT = "ledger"
SESSION = {"project": PROJECT, "session": "2026-11-30-10-00", "session_summary": "Wired the ledger"}


def call(service: MemoryService, method: str, params: dict[str, Any]) -> Any:
    """``method`` answered as the daemon answers it: the params decoded, then its handler."""
    entry = handler(service, method)
    assert entry is not None
    return entry(params)


class WatchfulIndex(SyncedIndex):
    """An index noting what the service asked of it, refusing one folder if told."""

    def __init__(self, store: IndexStore) -> None:
        super().__init__(store)
        self.asked: list[str] = []
        self.refused: str | None = None

    def refuse_root(self, directory: str) -> None:
        self.asked.append(f"refuse_root {directory}")
        if directory == self.refused:
            raise InvalidParams("'dir': refusing this folder", {"field": "dir"})

    def saved(self, raw_dir: str, path: str) -> tuple[str, str | None]:
        self.asked.append(f"saved {os.path.basename(path)}")
        return super().saved(raw_dir, path)

    def write(self, fn: Callable[[sqlite3.Connection], None]) -> None:
        self.asked.append("write")
        super().write(fn)


@pytest.fixture
def cfg(tmp_path: Path) -> Config:
    return Config(state_dir=tmp_path / "state")


@pytest.fixture
def index(store: IndexStore) -> WatchfulIndex:
    return WatchfulIndex(store)


@pytest.fixture
def service(index: WatchfulIndex, cfg: Config, store: IndexStore) -> MemoryService:
    return MemoryService(index, Selector(), Checker(), reporter(cfg, store))


def test_a_save_is_indexed_before_its_reply_and_load_last_finds_it(
    service: MemoryService, index: WatchfulIndex, memdir: Path
) -> None:
    saved = call(service, "save", {"dir": str(memdir), **SESSION})
    name = f"2026-11-30-10-00-{PROJECT}.md"
    assert list(saved) == [
        "path",
        "filename",
        "created",
        "kept",
        "migrated_from",
        "schema_version",
        "bytes",
        "dir",
    ]
    assert (saved["filename"], saved["created"], saved["dir"]) == (name, True, str(memdir))
    assert index.asked == [f"refuse_root {memdir}", f"saved {name}"]
    # Indexed by the save itself: the row is there before any directory sync.
    assert [f.filename for f in queries.files_under(index.reader(), str(memdir))] == [name]
    last = call(service, "load_last", {"dir": str(memdir), "project": PROJECT})
    assert last["found"] is True and last["filename"] == name and "notes" not in last


def test_a_refused_save_writes_nothing_and_indexes_nothing(
    service: MemoryService, index: WatchfulIndex, memdir: Path
) -> None:
    index.refused = str(memdir)
    with pytest.raises(InvalidParams, match="refusing this folder"):
        call(service, "save", {"dir": str(memdir), **SESSION})
    assert list(memdir.iterdir()) == [] and not any(a.startswith("saved") for a in index.asked)


@pytest.mark.parametrize(
    ("params", "error", "message"),
    [
        ({"dir": "/nonexistent/memoryd-x", **SESSION}, NotFound, "memory directory not found at"),
        ({**SESSION, "mode": "lazy"}, InvalidParams, "'mode' must be one of"),
        ({**SESSION, "colour": "red"}, InvalidParams, r"unknown parameter\(s\): colour"),
        ({"session_summary": "x"}, InvalidParams, "'project' is required"),
    ],
)
def test_save_is_parsed_before_anything_is_written(
    memdir: Path, params: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        save_request(decode(Save, {"dir": str(memdir), **params}))
    assert list(memdir.iterdir()) == []


def test_a_capitalised_project_is_lowercased_with_a_note_in_every_session_reply(
    service: MemoryService, memdir: Path
) -> None:
    note = ["project name 'Ledger' lowercased to 'ledger'"]
    saved = call(service, "save", {"dir": str(memdir), **SESSION, "project": "Ledger"})
    assert saved["filename"].endswith("-ledger.md") and saved["notes"] == note
    last = call(service, "load_last", {"dir": str(memdir), "project": "Ledger"})
    assert last["found"] is True and last["notes"] == note
    brief = call(
        service, "context", {"task": "ledger wiring", "dir": str(memdir), "project": "Ledger"}
    )
    assert brief["notes"] == note and brief["sessions_read"]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"dir": "."}, "'task' is required"),
        ({"task": "x", "dir": []}, "'dir' must be a directory path or a list of them"),
        ({"task": "x", "dir": ".", "budget_tokens": 50}, "'budget_tokens' must be an integer"),
        ({"task": "x", "dir": ".", "project": "a/b"}, "'project' must be a slug"),
        ({"task": "x", "dir": ".", "depth": 1}, r"unknown parameter\(s\): depth"),
    ],
)
def test_context_params_name_the_field(
    service: MemoryService, params: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidParams, match=message):
        call(service, "context", params)


def test_load_last_names_each_bad_field() -> None:
    with pytest.raises(InvalidParams, match="'dir' must be a directory path"):
        decode(LoadLast, {"dir": 3, "project": PROJECT})
    with pytest.raises(InvalidParams, match="'project' is required"):
        decode(LoadLast, {"dir": "."})
    with pytest.raises(InvalidParams, match="'reveal_secrets' must be true or false"):
        decode(LoadLast, {"dir": ".", "project": PROJECT, "reveal_secrets": "yes"})


def test_context_over_a_folder_synced_on_demand(
    service: MemoryService, memdir: Path, make_memory: MakeMemory
) -> None:
    call(
        service, "save", {"dir": str(memdir), **SESSION, "key_decisions": ["ledger posts nightly"]}
    )
    brief = call(service, "context", {"task": "how does the ledger post", "dir": [str(memdir)]})
    assert brief["status"] == "found"
    assert brief["sessions_read"] == [f"2026-11-30-10-00-{PROJECT}.md"]


def test_a_report_of_one_folder_is_written_where_the_config_says(
    service: MemoryService, cfg: Config, memdir: Path, make_memory: MakeMemory
) -> None:
    make_memory("project_ledger.md", "Invoices post to the ledger nightly")
    report = call(service, "report", {"dir": str(memdir), "older_than": "2d"})
    assert list(report) == ["at", "path", "json", "roots", "summary", "seconds"]
    assert report["roots"] == [str(memdir)] and report["summary"]["files"] == 1
    assert Path(report["path"]).parent == cfg.reports_dir
    body = json.loads(Path(report["json"]).read_text(encoding="utf-8"))
    assert body["older_than_days"] == 2


def test_report_params_are_checked(service: MemoryService, tmp_path: Path) -> None:
    with pytest.raises(InvalidParams, match="'older_than'"):
        call(service, "report", {"older_than": "soon"})
    with pytest.raises(InvalidParams, match="memory directory not found"):
        call(service, "report", {"dir": str(tmp_path / "gone")})


def test_check_writes_its_verdicts_through_the_index(
    store: IndexStore, tmp_path: Path, memdir: Path, make_memory: MakeMemory
) -> None:
    checkout = tmp_path / "checkout"
    (checkout / "src").mkdir(parents=True)
    make_memory("project_x.md", "See src/here.py and src/gone.py.")
    (checkout / "src" / "here.py").write_text("x")
    index = WatchfulIndex(store)
    service = MemoryService(index, Selector(), Checker({str(memdir): str(checkout)}))
    result = call(service, "check", {"dir": str(memdir)})
    assert list(result) == ["dir", "folders", "memories", "citing", "stale", "warnings"]
    (memory,) = result["memories"]
    assert memory["staleness"]["missing"] == ["src/gone.py"]
    assert index.asked == ["write"]
    # Stored, so the next list (and select) carries the verdict.
    listed = call(service, "list", {"dir": str(memdir)})
    (entry,) = listed["files"]
    assert entry["staleness"]["missing"] == ["src/gone.py"]
    with pytest.raises(InvalidParams, match=r"unknown parameter\(s\): strict"):
        call(service, "check", {"dir": str(memdir), "strict": True})


def test_a_save_as_a_client_sends_it_is_checked_and_written(
    service: MemoryService, memdir: Path
) -> None:
    steps = {"S1": "posted the first invoice"}
    sent = {
        "dir": str(memdir),
        "project": PROJECT,
        "session_summary": "Wired the ledger",
        "session": "2026-11-30-11-00",
        "steps_completed": steps,
        "key_decisions": ["ledger posts nightly"],
    }
    checked = save_request(decode(Save, sent))
    assert checked.dir == str(memdir) and checked.session.steps_completed == steps
    saved = call(service, "save", sent)
    assert saved["filename"] == f"2026-11-30-11-00-{PROJECT}.md"
    text = (memdir / saved["filename"]).read_text(encoding="utf-8")
    assert "ledger posts nightly" in text and "posted the first invoice" in text
