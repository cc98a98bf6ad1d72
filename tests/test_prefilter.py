"""Large folders: candidates picked from posting lists, ranked from them like from text."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest
from conftest import MakeMemory

from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.select import manifest as manifest_mod
from memoryd.select.analysis import DocTerms, analyse, decode, encode
from memoryd.select.local import LocalRanker
from memoryd.select.manifest import LARGE_DIRECTORY, Manifest, candidates_for
from memoryd.select.postings import Postings
from memoryd.select.prefilter import PREFILTER_LIMIT
from memoryd.select.selector import Selector
from memoryd.select.service import select_unrecorded

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


def test_large_folder_ranks_from_postings_as_from_text(large: tuple[IndexStore, Path]) -> None:
    store, folder = large
    selector = Selector()
    for query in QUERIES:
        manifest = selector.manifests.get(store.conn, str(folder))
        assert manifest.large and manifest.postings is not None
        pool = [c for _, c in candidates_for(store.conn, manifest, query)]
        assert 0 < len(pool) <= PREFILTER_LIMIT or "knitting" in query
        stored = LocalRanker().scores(query, pool, manifest.postings)
        assert stored == LocalRanker().scores(query, pool), query
        select_unrecorded(
            selector, store.conn, {"query": query, "dir": str(folder), "ranker": "local"}
        )
    # No document was analysed while answering: everything came from the index.
    assert len(selector.local._cache) == 0


def test_prefilter_offers_the_memory_a_rare_word_names(large: tuple[IndexStore, Path]) -> None:
    store, folder = large
    params = {"query": "zebracrossing failed again", "dir": str(folder), "ranker": "local"}
    result = select_unrecorded(Selector(), store.conn, params)
    assert [s["filename"] for s in result["selected"]] == ["feedback_zebra_crossing.md"]


def test_damaged_stored_terms_of_a_large_folder_fall_back_to_the_text(
    large: tuple[IndexStore, Path],
) -> None:
    store, folder = large
    with store.transaction() as conn:
        conn.execute(
            "UPDATE files SET terms = '[not json' WHERE filename = ?",
            ("feedback_zebra_crossing.md",),
        )
    params = {"query": "zebracrossing failed again", "dir": str(folder), "ranker": "local"}
    result = select_unrecorded(Selector(), store.conn, params)
    assert [s["filename"] for s in result["selected"]] == ["feedback_zebra_crossing.md"]


def test_folder_beyond_the_postings_limit_keeps_the_fts_prefilter(
    large: tuple[IndexStore, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, folder = large
    monkeypatch.setattr(manifest_mod, "POSTINGS_MAX_FILES", LARGE_DIRECTORY)
    selector = Selector()
    manifest = selector.manifests.get(store.conn, str(folder))
    assert manifest.postings is None and manifest.prefilter is None
    pool = [c for _, c in candidates_for(store.conn, manifest, QUERIES[0])]
    assert pool and all(c.terms is not None for c in pool)
    text = [type(c)(c.filename, c.name, c.description, c.type, c.body, c.mtime) for c in pool]
    assert LocalRanker().scores(QUERIES[0], pool) == LocalRanker().scores(QUERIES[0], text)
    params = {"query": "zebracrossing failed again", "dir": str(folder), "ranker": "local"}
    result = select_unrecorded(selector, store.conn, params)
    assert [s["filename"] for s in result["selected"]] == ["feedback_zebra_crossing.md"]


def test_lookups_by_bisection_match_a_walk_of_the_list() -> None:
    rng = random.Random(5)
    docs = [analyse(f"n{i}.md", "t", " ".join(rng.choices(WORDS, k=3)), "") for i in range(400)]
    postings = Postings(lambda: ((f"n{i}.md", doc) for i, doc in enumerate(docs)))
    few = {p: n for n, p in enumerate(rng.sample(range(400), 7))}  # few wanted: bisection
    every = {p: p for p in range(400)}  # all wanted: a walk
    for term in ("deploy", "cache", "absent"):
        expected = {
            few[p]: tuple(f.get(term, 0) for f in docs[p].fields)
            for p in few
            if any(f.get(term, 0) for f in docs[p].fields)
        }
        assert {i: tuple(c) for i, c in postings.hits(term, few)} == expected
        walked = {i: tuple(c) for i, c in postings.hits(term, every)}
        assert {few[p]: walked[p] for p in few if p in walked} == expected


def _same_answers(store: IndexStore, folder: Path, patched: Selector) -> None:
    """Every query gets the same slice, scores and picks from ``patched`` as from a fresh build."""
    fresh = Selector()
    for query in [*QUERIES, "zebracrossing again", "okapi renamed the dashboard"]:
        pools = [
            candidates_for(store.conn, s.manifests.get(store.conn, str(folder)), query)
            for s in (patched, fresh)
        ]
        assert [c.filename for _, c in pools[0]] == [c.filename for _, c in pools[1]], query
        scores = [
            LocalRanker().scores(
                query, [c for _, c in pool], s.manifests.get(store.conn, str(folder)).postings
            )
            for s, pool in zip((patched, fresh), pools, strict=True)
        ]
        assert scores[0] == scores[1] == LocalRanker().scores(query, [c for _, c in pools[1]])
        params = {"query": query, "dir": str(folder), "ranker": "local"}
        assert (
            select_unrecorded(patched, store.conn, params)["selected"]
            == select_unrecorded(fresh, store.conn, params)["selected"]
        )


def _resynced(store: IndexStore, folder: Path, selector: Selector) -> Manifest:
    Syncer(store).sync_tree(str(folder))
    return selector.manifests.get(store.conn, str(folder))


Warmed = tuple[IndexStore, Path, Selector, Manifest]


@pytest.fixture
def warmed(large: tuple[IndexStore, Path]) -> Warmed:
    """The large folder with its manifest built once (so a change can patch it)."""
    store, folder = large
    selector = Selector()
    before = selector.manifests.get(store.conn, str(folder))
    assert before.postings is not None and not before.postings.dead
    return store, folder, selector, before


def test_a_changed_large_folder_is_patched_and_answers_as_if_rebuilt(
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
    assert after.postings is not None and after.postings is not before.postings
    assert len(after.postings.dead) == 2  # the deleted note and the old text of note 7
    assert "project_note_3.md" not in after.postings.positions
    _same_answers(store, folder, selector)


def test_a_large_folder_with_many_changes_is_rebuilt(warmed: Warmed) -> None:
    store, folder, selector, _ = warmed
    for i in range(18):  # more than PATCH_SHARE of the folder, which stays large
        (folder / f"project_note_{i}.md").unlink()
    after = _resynced(store, folder, selector)
    assert after.large and after.postings is not None and not after.postings.dead
    _same_answers(store, folder, selector)


def test_a_write_that_touches_no_memory_keeps_the_lists(warmed: Warmed) -> None:
    store, folder, selector, before = warmed
    (folder / "MEMORY.md").write_text("- [note](project_note_1.md)\n", encoding="utf-8")
    after = _resynced(store, folder, selector)
    assert after.version != before.version and after.postings is before.postings
    # Written again: no memory changed and MEMORY.md was there, so nothing is redone.
    (folder / "MEMORY.md").write_text("- [note](project_note_2.md)\n", encoding="utf-8")
    again = _resynced(store, folder, selector)
    assert again.version != after.version
    assert again.relations is after.relations and again.postings is after.postings


def _naive_runs(docs: list[DocTerms], first: int = 0) -> dict[str, list[int]]:
    runs: dict[str, list[int]] = {}
    for position, doc in enumerate(docs, start=first):
        for term in sorted(set().union(*doc.fields)):
            runs.setdefault(term, []).extend([position, *(f.get(term, 0) for f in doc.fields)])
    return runs


@pytest.mark.parametrize("top_count", [3, 70_000])  # 2-byte lists, and one past 65,535
def test_lists_written_in_two_passes_hold_every_count(top_count: int) -> None:
    rng = random.Random(7)
    docs = [analyse(f"n{i}.md", "t", " ".join(rng.choices(WORDS, k=4)), "") for i in range(50)]
    docs[10] = DocTerms([{"deploy": top_count}, {}, {"cache": 2}, {}], [1, 0, 1, 0])
    added = [analyse("new.md", "deploy cache", "zebra", "")]
    postings = Postings(lambda: ((f"n{i}.md", doc) for i, doc in enumerate(docs)))
    patched = postings.patched({"n3.md"}, lambda: (("new.md", doc) for doc in added))
    fresh, extra = _naive_runs(docs), _naive_runs(added, 50)
    assert {t: list(postings.run(t)) for t in fresh} == fresh
    both = {t: fresh.get(t, []) + extra.get(t, []) for t in fresh.keys() | extra.keys()}
    assert {t: list(patched.run(t)) for t in both} == both
    assert patched.positions["new.md"] == 50 and "n3.md" not in patched.positions
    assert patched.dead == {3}


def test_signal_word_search_starts_from_the_full_text_hits(large: tuple[IndexStore, Path]) -> None:
    store, folder = large
    args = {"match": "replaces", "dir": str(folder)}
    plan = store.conn.execute(f"EXPLAIN QUERY PLAN {manifest_mod.REFERENCING}", args).fetchall()
    # Walking the folder by directory first runs the MATCH once per row: seconds at 10k files.
    assert plan[0]["detail"].startswith("SCAN files_fts"), [row["detail"] for row in plan]


def test_a_large_folder_is_loaded_in_one_read_transaction(
    large: tuple[IndexStore, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, folder = large
    seen: list[bool] = []
    real = manifest_mod._index_large

    def watched(conn: sqlite3.Connection, manifest: Manifest) -> None:
        seen.append(conn.in_transaction)  # both passes over the rows see one snapshot
        real(conn, manifest)

    monkeypatch.setattr(manifest_mod, "_index_large", watched)
    after: list[bool] = []
    for begin in (False, True):  # a caller's own transaction is left to it
        if begin:
            store.conn.execute("BEGIN")
        manifest_mod.ManifestCache().get(store.conn, str(folder))
        after.append(store.conn.in_transaction)
    store.conn.execute("COMMIT")
    assert seen == [True, True] and after == [False, True]


def test_lists_of_two_folders_share_their_term_strings() -> None:
    # Every folder decodes its own copies of the same words; fifty folders must not keep fifty.
    stored = encode(analyse("a.md", "deploy notes", "rollback plan", "worker queue"))

    def docs() -> list[tuple[str, DocTerms]]:
        doc = decode(stored)
        assert doc is not None
        return [("a.md", doc)]

    one, two = Postings(docs), Postings(docs)
    assert one._terms == two._terms and len(one._terms) > 4
    assert all(a is b for a, b in zip(one._terms, two._terms, strict=True))
