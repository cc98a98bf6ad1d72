"""Large folders: candidates picked by FTS5, ranked from their kept analyses like from text."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from conftest import MakeMemory

from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.select import large as large_mod
from memoryd.select import manifest as manifest_mod
from memoryd.select.large import LARGE_DIRECTORY, PREFILTER_LIMIT
from memoryd.select.local import LocalRanker
from memoryd.select.manifest import Manifest, candidates_for
from memoryd.select.selector import Selector
from memoryd.select.wiring import select_unrecorded

WORDS = [
    *("deploy", "rollback", "migration", "schema", "flaky", "pytest", "worker", "queue"),
    *("retry", "timeout", "cache", "latency", "postgres", "index", "token", "secret"),
    *("webhook", "billing", "invoice", "alert", "dashboard"),
]
QUERIES = [
    "flaky pytest retry timeout",
    "postgres migration schema rollback",
    "how do we deploy and roll back a release?",
    "unrelated question about knitting patterns",
]


def _large_folder(folder: Path, count: int) -> None:
    rng = random.Random(3)
    folder.mkdir()
    for i in range(count):
        desc = " ".join(rng.sample(WORDS, 6))
        body = " ".join(rng.choices(WORDS, k=60))
        (folder / f"project_note_{i}.md").write_text(
            f"---\nname: note {i} {rng.choice(WORDS)}\ndescription: {desc}\ntype: project\n"
            f"---\n\n{body}\n",
            encoding="utf-8",
        )


@pytest.fixture
def large(tmp_path: Path, store: IndexStore, make_memory: MakeMemory) -> tuple[IndexStore, Path]:
    folder = tmp_path / "big"
    _large_folder(folder, LARGE_DIRECTORY + 20)
    make_memory(
        "feedback_zebra_crossing.md",
        "the zebracrossing lint and its fix",
        name="zebra crossing rule",
        body="run the zebracrossing check before merging\n",
        directory=folder,
    )
    Syncer(store).sync_tree(str(folder))
    return store, folder


def test_large_folder_ranks_its_slice_from_its_analyses_as_from_text(
    large: tuple[IndexStore, Path],
) -> None:
    store, folder = large
    selector = Selector()
    for query in QUERIES:
        manifest = selector.manifests.get(store.conn, str(folder))
        assert manifest.large
        pool = [c for _, c in candidates_for(store.conn, manifest, query)]
        assert 0 < len(pool) <= PREFILTER_LIMIT or "knitting" in query
        assert all(c.terms is not None for c in pool)
        text = [type(c)(c.filename, c.name, c.description, c.type, c.body, c.mtime) for c in pool]
        assert LocalRanker().scores(query, pool) == LocalRanker().scores(query, text), query


def test_prefilter_offers_the_memory_a_rare_word_names(large: tuple[IndexStore, Path]) -> None:
    store, folder = large
    params = {"query": "zebracrossing failed again", "dir": str(folder), "ranker": "local"}
    result = select_unrecorded(Selector(), store.conn, params)
    assert [s["filename"] for s in result["selected"]] == ["feedback_zebra_crossing.md"]


def _same_answers(store: IndexStore, folder: Path, changed: Selector) -> None:
    """Every query gets the same slice and picks from ``changed`` as from a fresh selector."""
    fresh = Selector()
    for query in [*QUERIES, "zebracrossing again", "okapi renamed the dashboard"]:
        pools = [
            candidates_for(store.conn, s.manifests.get(store.conn, str(folder)), query)
            for s in (changed, fresh)
        ]
        assert [c.filename for _, c in pools[0]] == [c.filename for _, c in pools[1]], query
        params = {"query": query, "dir": str(folder), "ranker": "local"}
        assert (
            select_unrecorded(changed, store.conn, params)["selected"]
            == select_unrecorded(fresh, store.conn, params)["selected"]
        )


def _resynced(store: IndexStore, folder: Path, selector: Selector) -> Manifest:
    Syncer(store).sync_tree(str(folder))
    return selector.manifests.get(store.conn, str(folder))


Warmed = tuple[IndexStore, Path, Selector, Manifest]


@pytest.fixture
def warmed(large: tuple[IndexStore, Path]) -> Warmed:
    """The large folder with its manifest built once (so a change can reuse it)."""
    store, folder = large
    selector = Selector()
    before = selector.manifests.get(store.conn, str(folder))
    return store, folder, selector, before


def test_a_changed_large_folder_answers_as_if_loaded_afresh(
    warmed: Warmed, make_memory: MakeMemory
) -> None:
    store, folder, selector, before = warmed
    (folder / "project_note_3.md").unlink()
    make_memory("feedback_okapi.md", "okapi renamed the dashboard", directory=folder)
    (folder / "project_note_7.md").write_text(
        "---\nname: note 7\ndescription: okapi and the zebracrossing lint\ntype: project\n---\n\n"
        "okapi okapi dashboard\n",
        encoding="utf-8",
    )
    after = _resynced(store, folder, selector)
    assert after.version != before.version
    _same_answers(store, folder, selector)


def test_a_changed_large_folder_reads_only_the_changed_rows(
    warmed: Warmed, make_memory: MakeMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, folder, selector, _ = warmed
    read: list[list[str]] = []
    real = large_mod._rows_named

    def watched(conn: sqlite3.Connection, directory: str, names: Any, *rest: Any, **kw: Any) -> Any:
        read.append(sorted(names))
        return real(conn, directory, names, *rest, **kw)

    monkeypatch.setattr(large_mod, "_rows_named", watched)
    make_memory("feedback_okapi.md", "okapi replaces the old dashboard", directory=folder)
    after = _resynced(store, folder, selector)
    assert after.large
    assert read == [["feedback_okapi.md"], ["feedback_okapi.md"]]  # its header, then its text
    _same_answers(store, folder, selector)


def test_a_large_folder_with_many_changes_answers_as_if_loaded_afresh(warmed: Warmed) -> None:
    store, folder, selector, _ = warmed
    for i in range(18):  # many at once, and the folder stays large
        (folder / f"project_note_{i}.md").unlink()
    after = _resynced(store, folder, selector)
    assert after.large
    _same_answers(store, folder, selector)


def test_a_write_that_touches_no_memory_keeps_the_links(warmed: Warmed) -> None:
    store, folder, selector, before = warmed
    (folder / "MEMORY.md").write_text("- [note](project_note_1.md)\n", encoding="utf-8")
    after = _resynced(store, folder, selector)
    assert after.version != before.version and after.has_index_file
    # Written again: no memory changed and MEMORY.md was there, so nothing is redone.
    (folder / "MEMORY.md").write_text("- [note](project_note_2.md)\n", encoding="utf-8")
    again = _resynced(store, folder, selector)
    assert again.version != after.version
    assert again.relations is after.relations
    _same_answers(store, folder, selector)


def test_signal_word_search_starts_from_the_full_text_hits(large: tuple[IndexStore, Path]) -> None:
    store, folder = large
    args = {"match": "replaces", "dir": str(folder)}
    plan = store.conn.execute(f"EXPLAIN QUERY PLAN {large_mod.REFERENCING}", args).fetchall()
    # Walking the folder by directory first runs the MATCH once per row: seconds at 10k files.
    assert plan[0]["detail"].startswith("SCAN files_fts"), [row["detail"] for row in plan]


def test_a_large_folder_is_loaded_in_one_read_transaction(
    large: tuple[IndexStore, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, folder = large
    seen: list[bool] = []
    real = large_mod.relations

    def watched(conn: sqlite3.Connection, *args: Any) -> Any:
        seen.append(conn.in_transaction)  # its reads and the version's see one snapshot
        return real(conn, *args)

    monkeypatch.setattr(large_mod, "relations", watched)
    after: list[bool] = []
    for begin in (False, True):  # a caller's own transaction is left to it
        if begin:
            store.conn.execute("BEGIN")
        manifest_mod.ManifestCache().get(store.conn, str(folder))
        after.append(store.conn.in_transaction)
    store.conn.execute("COMMIT")
    assert seen == [True, True] and after == [False, True]
