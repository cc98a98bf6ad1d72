"""A folder's first ``select`` pays only for what its answer needs (issue 22, section 4)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import MakeMemory

from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.replies import SelectResult
from memoryd.select import relations as relations_mod
from memoryd.select.manifest import ManifestCache
from memoryd.select.selector import Selector
from memoryd.select.wiring import select_unrecorded

Asker = Callable[[str, list[str]], SelectResult]
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


@pytest.fixture
def searches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per search of a folder for its near-duplicates."""
    found: list[int] = []
    real = relations_mod.twins_of

    def counted(*args: Any) -> list[tuple[str, str]]:
        found.append(1)
        return real(*args)

    monkeypatch.setattr(relations_mod, "twins_of", counted)
    return found


@pytest.fixture
def ask(memdir: Path, make_memory: MakeMemory, store: IndexStore) -> Asker:
    """``select`` over a synced folder holding :data:`TWINS`, through one selector."""
    for filename, (name, description) in TWINS.items():
        make_memory(filename, description, name=name)
    selector = Selector()

    def asker(query: str, surfaced: list[str]) -> SelectResult:
        Syncer(store).sync_tree(str(memdir))
        params = {"query": query, "dir": str(memdir), "ranker": "local", "surfaced": surfaced}
        return select_unrecorded(selector, store.conn, params)

    return asker


def test_near_duplicates_are_looked_for_only_when_an_answer_needs_them(
    ask: Asker, searches: list[int]
) -> None:
    assert ask("unrelated question about knitting patterns", [])["selected"] == []
    assert searches == []  # nothing answered, nothing shown: no twins to look for
    answer = ask("flaky tests and retries", ["feedback_flaky_retries.md"])
    assert answer["excluded"]["duplicates_of_surfaced"] == 1  # its twin is withheld
    ask("release notes", [])
    assert searches == [1]  # once per version of the folder


def test_near_duplicates_follow_an_edit_to_a_header(ask: Asker, make_memory: MakeMemory) -> None:
    shown = ["feedback_flaky_retries.md"]
    assert ask("flaky tests and retries", shown)["excluded"]["duplicates_of_surfaced"] == 1
    name, description = TWINS["feedback_release_notes.md"]
    make_memory("feedback_release_notes.md", description, name=name, body="Also the flags.\n")
    assert ask("flaky tests and retries", shown)["excluded"]["duplicates_of_surfaced"] == 1
    make_memory("feedback_no_retry_plugin.md", "Reviewed weekly", name="Quarantine lists")
    assert ask("flaky tests and retries", shown)["excluded"]["duplicates_of_surfaced"] == 0


def test_an_edit_that_adds_a_banner_supersedes_the_memory(
    memdir: Path, make_memory: MakeMemory, store: IndexStore
) -> None:
    for i in range(6):
        make_memory(f"project_note_{i}.md", f"release step number {i}", type="project")
    cache = ManifestCache()

    def superseded() -> dict[str, str | None]:
        Syncer(store).sync_tree(str(memdir))
        relations = cache.get(store.conn, str(memdir)).relations
        assert relations is not None
        return relations.superseded

    assert superseded() == {}
    make_memory(
        "project_note_2.md",
        "release step number 2",
        type="project",
        body="> Superseded by project_note_5.md\n",
    )
    assert superseded() == {"project_note_2.md": "project_note_5.md"}
