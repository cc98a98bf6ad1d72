"""A folder's term statistics: worked out in memory once per memory version, scored identically."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from indexed_candidates import indexed_candidates

from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.select import candidates as candidates_mod
from memoryd.select import manifest as manifest_mod
from memoryd.select.analysis import DocTerms, analyse
from memoryd.select.local import LocalRanker
from memoryd.select.manifest import ManifestCache, candidates_for
from memoryd.select.relations import compute_relations
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
    store = IndexStore(tmp_path / "index.db")
    Syncer(store).sync_tree(str(folder))
    return store, folder


def test_scores_from_the_manifest_equal_scores_from_text(
    indexed_examples: tuple[IndexStore, Path],
) -> None:
    store, folder = indexed_examples
    from_disk = indexed_candidates(folder, folder.parent / "text.db", analysed=False)
    manifest = ManifestCache().get(store.conn, str(folder))
    cands = [c for _, c in candidates_for(store.conn, manifest, "")]
    assert all(c.terms is not None and not c.body for c in cands)  # analyses, no bodies
    for query in QUERIES:
        # A subset too: statistics are over the candidates a query is ranked against.
        for skip in (set(), {from_disk[0].filename, from_disk[3].filename}):
            text = LocalRanker().contributions(
                query, [c for c in from_disk if c.filename not in skip]
            )
            kept = LocalRanker().contributions(query, [c for c in cands if c.filename not in skip])
            assert kept == text, query


def _write_rules(folder: Path, size: int) -> None:
    folder.mkdir(exist_ok=True)
    for i in range(size):
        (folder / f"feedback_rule_{i}.md").write_text(
            f"---\nname: rule {i}\ndescription: {WORDS[i % len(WORDS)]} rule {i}\n"
            "type: feedback\n---\n\nAlways run the flaky pytest suite twice.\n",
            encoding="utf-8",
        )


def test_a_small_folder_is_analysed_once_per_version(
    tmp_path: Path, store: IndexStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "memory"
    _write_rules(folder, 5)
    (folder / "feedback_zebra.md").write_text(
        "---\nname: zebra crossing lint\ndescription: the zebracrossing check and its fix\n"
        "type: feedback\n---\n\nRun the zebracrossing check before merging.\n",
        encoding="utf-8",
    )
    Syncer(store).sync_tree(str(folder))
    analysed: list[str] = []
    real = analyse

    def counting(filename: str, *rest: str | None) -> object:
        analysed.append(filename)
        return real(filename, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(manifest_mod, "analyse", counting)
    selector = Selector()
    query = "the zebracrossing check failed"
    params = {"query": query, "dir": str(folder), "ranker": "local"}
    first = select_unrecorded(selector, store.conn, params)
    assert first["selected"][0]["filename"] == "feedback_zebra.md"
    assert analysed and len(analysed) == len(set(analysed))
    analysed.clear()
    for _ in range(3):  # the same folder again: nothing is analysed again
        assert select_unrecorded(selector, store.conn, params) == first
    assert analysed == []
    zebra = folder / "feedback_zebra.md"
    zebra.write_text(zebra.read_text() + "\nAlso on the release branch.\n", encoding="utf-8")
    Syncer(store).sync_tree(str(folder))
    again = select_unrecorded(selector, store.conn, params)
    assert again["selected"][0]["filename"] == "feedback_zebra.md"
    assert analysed == sorted(p.name for p in folder.glob("*.md"))


def test_manifest_cache_is_bounded_by_memory_not_by_folder_count(tmp_path: Path) -> None:
    store = IndexStore(tmp_path / "index.db")
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


def test_large_counts_keep_their_value(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    # 70,000 repeats of one word.
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
    store = IndexStore(tmp_path / "index.db")
    Syncer(store).sync_tree(str(folder))
    manifest = ManifestCache().get(store.conn, str(folder))
    cands = [c for _, c in candidates_for(store.conn, manifest, "")]
    stored = LocalRanker().scores("zzlogword", cands)
    from_text = indexed_candidates(folder, tmp_path / "text.db", analysed=False)
    assert stored == LocalRanker().scores("zzlogword", from_text)
    assert stored["reference_log_dump.md"] > 0
    store.close()


def test_folder_links_read_headers_from_the_analyses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Near-duplicate links come from the folder's analyses, equal to tokenizing the headers."""
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
    store = IndexStore(tmp_path / "index.db")
    Syncer(store).sync_tree(str(folder))
    tokenized: list[str] = []

    def counting(filename: str, name: str | None, description: str | None, body: str) -> DocTerms:
        tokenized.append(filename)
        return analyse(filename, name, description, body)

    monkeypatch.setattr(candidates_mod, "analyse", counting)
    links = ManifestCache().get(store.conn, str(folder)).relations
    assert links is not None
    assert links.near_duplicates == [("feedback_no_sleep_in_tests.md", "feedback_wait_helpers.md")]
    assert tokenized == []  # nothing was tokenized for the links
    again = compute_relations(indexed_candidates(folder, tmp_path / "text.db", analysed=False))
    assert (links.superseded, links.near_duplicates) == (again.superseded, again.near_duplicates)
