"""Term statistics computed at index time: stored with the row, refreshed, scored identically."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.select import local as local_mod
from memoryd.select import manifest as manifest_mod
from memoryd.select import relations as relations_mod
from memoryd.select._text import terms
from memoryd.select.analysis import ANALYSIS_VERSION, TERM_ANALYSIS, analyse, decode
from memoryd.select.candidates import load_directory
from memoryd.select.local import LocalRanker
from memoryd.select.manifest import LARGE_DIRECTORY, ManifestCache, candidates_for
from memoryd.select.relations import HeaderVectors, compute_relations
from memoryd.select.selector import Selector
from memoryd.select.wiring import select_unrecorded

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "memory"
QUERIES = [
    "the pytest run hangs with xdist workers",
    "how do we deploy and roll back a release?",
    "should the handlers call http synchronously",
    "who reviews database migrations before merge",
    "what did we decide about auth tokens",
    "unrelated question about knitting patterns",
]
WORDS = [
    *("deploy", "rollback", "migration", "schema", "flaky", "pytest", "worker", "queue"),
    *("retry", "timeout", "cache", "latency", "postgres", "index", "token", "secret"),
    *("webhook", "billing", "invoice", "alert", "dashboard"),
]


@pytest.fixture
def indexed_examples(tmp_path: Path) -> tuple[IndexStore, Path]:
    folder = tmp_path / "memory"
    shutil.copytree(EXAMPLES, folder)
    store = IndexStore(tmp_path / "index.db", TERM_ANALYSIS)
    Syncer(store).sync_tree(str(folder))
    return store, folder


def _stored(store: IndexStore) -> dict[str, bytes | None]:
    rows = store.conn.execute("SELECT filename, terms FROM files WHERE kind = 'memory'")
    return {fn: terms for fn, terms in rows}


def test_every_memory_row_stores_its_analysis(indexed_examples: tuple[IndexStore, Path]) -> None:
    store, folder = indexed_examples
    stored = _stored(store)
    assert stored
    for c in load_directory(folder):
        text = stored[c.filename]
        assert text is not None
        assert decode(text) == analyse(c.filename, c.name, c.description, c.body)
    others = store.conn.execute("SELECT terms FROM files WHERE kind != 'memory'").fetchall()
    assert others and all(t is None for (t,) in others)


def test_changed_analysis_is_rebuilt_from_stored_text(
    indexed_examples: tuple[IndexStore, Path],
) -> None:
    store, folder = indexed_examples
    expected = _stored(store)
    version = store.conn.execute("SELECT version FROM directories").fetchone()[0]
    with store.transaction() as conn:
        conn.execute("UPDATE files SET terms = NULL")
        conn.execute("UPDATE meta SET value = 'an older analysis' WHERE key = 'analysis_version'")
    store.close()
    shutil.rmtree(folder)  # the refresh must not need the files
    reopened = IndexStore(store.path, TERM_ANALYSIS)
    try:
        assert _stored(reopened) == expected
        meta = reopened.conn.execute("SELECT value FROM meta WHERE key = 'analysis_version'")
        assert meta.fetchone()[0] == ANALYSIS_VERSION
        # Readers drop manifests cached under the old analysis.
        assert reopened.conn.execute("SELECT version FROM directories").fetchone()[0] > version
    finally:
        reopened.close()


def test_an_index_with_json_term_stats_is_migrated(
    indexed_examples: tuple[IndexStore, Path],
) -> None:
    store, _ = indexed_examples
    expected = _stored(store)
    with store.transaction() as conn:  # back to the previous release: JSON in terms_json
        conn.execute("ALTER TABLE files RENAME COLUMN terms TO terms_json")
        conn.execute("UPDATE files SET terms_json = '[[1, 1, 1, 1], {}, {}, {}, {}]'")
        conn.execute("UPDATE meta SET value = 'the JSON analysis' WHERE key = 'analysis_version'")
        conn.execute("DELETE FROM _migrations WHERE name = '009_packed_term_stats'")
    store.close()
    reopened = IndexStore(store.path, TERM_ANALYSIS)
    try:
        assert _stored(reopened) == expected
        assert all(isinstance(t, bytes) for t in expected.values())
    finally:
        reopened.close()


def test_scores_from_postings_equal_scores_from_text(
    indexed_examples: tuple[IndexStore, Path],
) -> None:
    store, folder = indexed_examples
    from_disk = load_directory(folder)
    manifest = ManifestCache().get(store.conn, str(folder))
    # The folder's first query is ranked from the stored analyses, the next ones
    # from the posting lists built from them (then the analyses go).
    first = [c for _, c in candidates_for(store.conn, manifest, "")]
    assert all(c.terms is not None for c in first)
    cands = [c for _, c in candidates_for(store.conn, manifest, "")]
    assert manifest.postings is not None
    assert all(c.terms is None for c in cands)  # a cached folder keeps postings only
    for query in QUERIES:
        # A subset too: statistics are over the candidates a query is ranked against.
        for skip in (set(), {from_disk[0].filename, from_disk[3].filename}):
            text = LocalRanker().contributions(
                query, [c for c in from_disk if c.filename not in skip]
            )
            analysed = LocalRanker().contributions(
                query, [c for c in first if c.filename not in skip]
            )
            stored = LocalRanker().contributions(
                query, [c for c in cands if c.filename not in skip], manifest.postings
            )
            assert stored == analysed == text, query


@pytest.mark.parametrize("size", [3, LARGE_DIRECTORY + 5])
def test_a_folder_selects_without_analysing_documents(
    tmp_path: Path, store: IndexStore, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    for i in range(size):
        (folder / f"feedback_rule_{i}.md").write_text(
            f"---\nname: rule {i}\ndescription: {WORDS[i % len(WORDS)]} rule {i}\n"
            "type: feedback\n---\n\nAlways run the flaky pytest suite twice.\n",
            encoding="utf-8",
        )
    (folder / "feedback_zebra.md").write_text(
        "---\nname: zebra crossing lint\ndescription: the zebracrossing check and its fix\n"
        "type: feedback\n---\n\nRun the zebracrossing check before merging.\n",
        encoding="utf-8",
    )
    Syncer(store).sync_tree(str(folder))

    def refused(*args: object) -> None:
        raise AssertionError("a document was analysed at select time")

    # Documents are analysed once, by the writer: a select reads their stored counts.
    monkeypatch.setattr(local_mod, "analyse", refused)
    monkeypatch.setattr(manifest_mod, "analyse", refused)
    selector = Selector()
    answered = [
        select_unrecorded(selector, store.conn, {"query": q, "dir": str(folder), "ranker": "local"})
        for q in [*QUERIES, "the zebracrossing check failed"]
    ]
    assert answered[-1]["selected"][0]["filename"] == "feedback_zebra.md"


def test_reader_of_rows_without_stats_still_ranks(
    indexed_examples: tuple[IndexStore, Path], tmp_path: Path
) -> None:
    store, folder = indexed_examples
    before = select_unrecorded(
        Selector(), store.conn, {"query": QUERIES[0], "dir": str(folder), "ranker": "local"}
    )
    assert before["selected"]
    store.close()
    # An index another memoryd wrote without the column filled (as before migration 006).
    with sqlite3.connect(store.path) as conn:
        conn.execute("UPDATE files SET terms = NULL")
    conn.close()
    reader = sqlite3.connect(f"file:{store.path}?mode=ro", uri=True)
    reader.row_factory = sqlite3.Row
    after = select_unrecorded(
        Selector(), reader, {"query": QUERIES[0], "dir": str(folder), "ranker": "local"}
    )
    reader.close()
    assert [s["filename"] for s in after["selected"]] == [s["filename"] for s in before["selected"]]
    assert [s["score"] for s in after["selected"]] == [s["score"] for s in before["selected"]]


def test_manifest_cache_is_bounded_by_memory_not_by_folder_count(tmp_path: Path) -> None:
    store = IndexStore(tmp_path / "index.db", TERM_ANALYSIS)
    folders = []
    for n in range(40):
        folder = tmp_path / f"project-{n}" / "memory"
        folder.mkdir(parents=True)
        for i in range(3):
            (folder / f"feedback_{i}.md").write_text(
                f"---\nname: rule {i}\ndescription: {WORDS[(n + i) % len(WORDS)]} rule\n"
                f"type: feedback\n---\n\nbody {n} {i}\n",
                encoding="utf-8",
            )
        folders.append(str(folder))
    Syncer(store).sync_tree(str(tmp_path))
    roomy = ManifestCache()
    first = [roomy.get(store.conn, d) for d in folders]
    # Cycling through 40 folders: every one is still cached (a count limit of 32 thrashed).
    assert all(roomy.get(store.conn, d) is m for d, m in zip(folders, first, strict=True))
    budget = 3 * max(m.weight for m in first)
    tight = ManifestCache(budget=budget)
    for d in folders:
        tight.get(store.conn, d)
    assert len(tight._items) == 3
    assert tight._items.used <= budget
    store.close()


@pytest.mark.parametrize(
    "damage",
    [
        # The JSON text an earlier memoryd stored, read before the store rewrote it.
        '[[1, 2, 3, 4], {}, {}, {}, {"deploy": 2}]',
        b"",
        b"no separator at all",
        b"1 2 3 4\n\n\n\ndeploy\0",  # no count marker
        b"1 2 3 4\n\n\n\ndeploy\0b",  # a term without its count
        b"1 2 3 4\n\n\n\ndeploy\0b\x02\x03",  # a count without its term
        b"1 2 3\n\n\n\ndeploy\0b\x02",  # three lengths
        b"1 2 3 4\n\n\ndeploy\0b\x02",  # three fields
        b"1 2 x 4\n\n\n\ndeploy\0b\x02",
        b"1 2 3 4\n\n\n\ndeploy\0t many",
        b"1 2 3 4\n\n\n\ndeploy\0t -3",
        b"1 2 -3 4\n\n\n\ndeploy\0b\x02",
        b"1 2 3 4\n\n\n\ndeploy deploy\0b\x02\x02",  # one term twice in a field
        b"1 2 3 4\n\n\n\ndeploy\0z\x02",  # unknown marker
    ],
)
def test_damaged_stored_terms_fall_back_to_the_text(
    indexed_examples: tuple[IndexStore, Path], damage: str | bytes
) -> None:
    assert decode(damage) is None
    store, folder = indexed_examples
    params = {"query": QUERIES[1], "dir": str(folder), "ranker": "local"}
    before = select_unrecorded(Selector(), store.conn, params)
    assert before["selected"]
    with store.transaction() as conn:
        conn.execute("UPDATE files SET terms = ? WHERE terms IS NOT NULL", (damage,))
    after = select_unrecorded(Selector(), store.conn, params)
    picked = [[(s["filename"], s["score"]) for s in r["selected"]] for r in (before, after)]
    assert picked[0] == picked[1]


def test_counts_beyond_two_bytes_keep_their_value(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    # 70,000 repeats of one word: more than a 2-byte posting entry can hold.
    (folder / "reference_log_dump.md").write_text(
        "---\nname: log dump\ndescription: a pasted log\ntype: reference\n---\n\n"
        + "zzlogword " * 70_000,
        encoding="utf-8",
    )
    for i in range(5):
        (folder / f"feedback_other_{i}.md").write_text(
            f"---\nname: other {i}\ndescription: zzlogword mentioned once\ntype: feedback\n"
            "---\n\nbody\n",
            encoding="utf-8",
        )
    store = IndexStore(tmp_path / "index.db", TERM_ANALYSIS)
    Syncer(store).sync_tree(str(folder))
    manifest = ManifestCache().get(store.conn, str(folder))
    candidates_for(store.conn, manifest, "")  # the second query builds the posting lists
    cands = [c for _, c in candidates_for(store.conn, manifest, "")]
    assert manifest.postings is not None
    stored = LocalRanker().scores("zzlogword", cands, manifest.postings)
    assert stored == LocalRanker().scores("zzlogword", load_directory(folder))
    assert stored["reference_log_dump.md"] > 0
    store.close()


def test_folder_links_read_headers_from_stored_terms(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Near-duplicate links come from the stored analysis, equal to tokenizing the headers."""
    folder = tmp_path / "memory"
    folder.mkdir()
    headers = {
        "feedback_no_sleep_in_tests.md": (
            "No sleeps in tests",
            "Never use sleep in tests to wait for async work; poll with a timeout helper",
        ),
        "feedback_wait_helpers.md": (
            "Use the wait helper",
            "Reminder: tests waiting on async work should poll with the timeout helper, not sleep",
        ),
        "feedback_billing.md": ("Billing rewrite", "Invoices move to the new billing service"),
    }
    for filename, (name, description) in headers.items():
        (folder / filename).write_text(
            f"---\nname: {name!r}\ndescription: {description!r}\ntype: feedback\n---\nBody.\n"
        )
    store = IndexStore(tmp_path / "index.db", TERM_ANALYSIS)
    Syncer(store).sync_tree(str(folder))
    tokenized: list[str] = []

    def counting(text: str) -> list[str]:
        tokenized.append(text)
        return terms(text)

    monkeypatch.setattr(relations_mod, "terms", counting)
    links = ManifestCache().get(store.conn, str(folder)).relations
    assert links is not None
    assert links.near_duplicates == [("feedback_no_sleep_in_tests.md", "feedback_wait_helpers.md")]
    assert tokenized == []  # nothing was tokenized for the links
    vectors = HeaderVectors()
    assert links == compute_relations(load_directory(folder), vectors)
    assert len(tokenized) == len(vectors) == len(headers)  # from text: kept by header
    compute_relations(load_directory(folder), vectors)
    assert len(tokenized) == len(headers)  # the same headers again: not tokenized again
