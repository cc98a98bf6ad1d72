"""A folder's first ``select`` pays only for what its answer needs (issue 22, section 4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import MakeMemory

from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.replies import SelectResult
from memoryd.select import manifest as manifest_mod
from memoryd.select import relations as relations_mod
from memoryd.select.candidates import Candidate
from memoryd.select.manifest import ManifestCache
from memoryd.select.selector import Selector
from memoryd.select.service import select_unrecorded
from memoryd.select.supersession import Signals, signals_of

TWINS = {
    "feedback_flaky_retries.md": (
        "Flaky tests get no retries",
        "Never add retries to flaky tests; find the race and fix it",
    ),
    "feedback_no_retry_plugin.md": (
        "No retries for flaky tests",
        "Flaky tests are fixed at the race, never hidden by retries",
    ),
    "feedback_release_notes.md": ("Release notes", "Every release lists its migrations"),
}


def test_near_duplicates_are_looked_for_only_when_an_answer_needs_them(
    memdir: Path, make_memory: MakeMemory, store: IndexStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    for filename, (name, description) in TWINS.items():
        make_memory(filename, description, name=name)
    Syncer(store).sync_tree(str(memdir))
    searches: list[int] = []
    real = relations_mod._near_duplicates

    def counted(*args: Any) -> list[tuple[str, str]]:
        searches.append(1)
        return real(*args)

    monkeypatch.setattr(relations_mod, "_near_duplicates", counted)
    selector = Selector()

    def ask(query: str, surfaced: list[str]) -> SelectResult:
        params = {"query": query, "dir": str(memdir), "ranker": "local", "surfaced": surfaced}
        return select_unrecorded(selector, store.conn, params)

    assert ask("unrelated question about knitting patterns", [])["selected"] == []
    assert searches == []  # nothing answered, nothing shown: no twins to look for
    answer = ask("flaky tests and retries", ["feedback_flaky_retries.md"])
    assert answer["excluded"]["duplicates_of_surfaced"] == 1  # its twin is withheld
    ask("release notes", [])
    assert searches == [1]  # once per version of the folder


def test_after_an_edit_only_the_edited_memory_is_read_for_supersession(
    memdir: Path, make_memory: MakeMemory, store: IndexStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(6):
        make_memory(f"project_note_{i}.md", f"release step number {i}", type="project")
    read: list[str] = []
    real = signals_of

    def counted(c: Candidate) -> Signals:
        read.append(c.filename)
        return real(c)

    monkeypatch.setattr(manifest_mod, "signals_of", counted)
    cache = ManifestCache()

    def superseded() -> dict[str, str | None]:
        Syncer(store).sync_tree(str(memdir))
        relations = cache.get(store.conn, str(memdir)).relations
        assert relations is not None
        return relations.superseded

    assert superseded() == {}
    assert len(read) == 6
    make_memory(
        "project_note_2.md",
        "release step number 2",
        type="project",
        body="> Superseded by project_note_5.md\n",
    )
    assert superseded() == {"project_note_2.md": "project_note_5.md"}
    assert read[6:] == ["project_note_2.md"]
