"""Behaviour of the local ranker on real memory files and small crafted folders."""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
import shutil
from collections import Counter

import pytest
from conftest import CORPUS
from indexed_candidates import indexed_candidates

from memoryd.select import relations
from memoryd.select.candidates import Candidate
from memoryd.select.local import LocalRanker
from memoryd.select.relations import (
    Relations,
    compute_relations,
    superseded_by,
)
from memoryd.select.tuning import DEFAULT, Tuning

SHOP = CORPUS / "projects" / "shop-backend"


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> list[Candidate]:
    """A copy of the shop-backend memory folder (broken files included, MEMORY.md too)."""
    dest = tmp_path_factory.mktemp("shop")
    for path in SHOP.glob("*.md"):
        shutil.copy(path, dest / path.name)
    return indexed_candidates(dest, tmp_path_factory.mktemp("shop-index") / "index.db")


def names(ranker: LocalRanker, query: str, cands: list[Candidate]) -> list[str]:
    return [s.filename for s in ranker.ranked(query, cands)[0]]


def mem(
    filename: str, name: str, description: str, body: str = "", type_: str = "project"
) -> Candidate:
    return Candidate(filename, name, description, type_, body, 0.0)


def test_loader_skips_index_and_broken_files(shop: list[Candidate]) -> None:
    files = {c.filename for c in shop}
    assert "MEMORY.md" not in files
    assert "reference_k8s_deploy.md" not in files
    assert "feedback_admin_bulk_actions.md" not in files
    assert "feedback_pytest_xdist_gotcha.md" in files


def test_direct_question_finds_its_memory(shop: list[Candidate]) -> None:
    got = names(LocalRanker(), "what's the status of the django 5 upgrade?", shop)
    assert got[:1] == ["project_django5_upgrade.md"]


def test_paraphrase_finds_memory_without_shared_words() -> None:
    folder = [
        mem("feedback_flaky_suite.md", "Flaky suite", "The suite is flaky and errors under xdist"),
        mem("project_release.md", "Release train", "Releases go out every second Tuesday"),
        mem("reference_grafana.md", "Grafana boards", "Where the latency dashboards live"),
    ]
    query = "the checks fail intermittently"
    assert names(LocalRanker(), query, folder) == ["feedback_flaky_suite.md"]
    # The match comes from the paraphrase groups: without them nothing clearly helps.
    assert names(LocalRanker(Tuning(lexicon=frozenset())), query, folder) == []


@pytest.mark.parametrize(
    "query",
    [
        "bump the copyright year in the LICENSE file",
        "what does functools.cached_property do differently from property?",
        "rename the helper fmt_addr to format_address everywhere",
    ],
)
def test_unrelated_prompt_returns_nothing(shop: list[Candidate], query: str) -> None:
    assert LocalRanker().ranked(query, shop)[0] == []


def test_superseded_memory_loses_to_its_replacement(shop: list[Candidate]) -> None:
    got = names(
        LocalRanker(), "some celery tasks vanish under load, check the redis broker config", shop
    )
    assert "project_celery_broker_rabbitmq.md" in got
    assert "project_celery_broker_redis.md" not in got


def test_results_are_capped_sorted_and_deterministic(shop: list[Candidate]) -> None:
    ranker = LocalRanker()
    query = "write the celery task that retries soft-declined stripe payments"
    first = ranker.ranked(query, shop, limit=2)[0]
    assert len(first) <= 2
    assert [s.score for s in first] == sorted((s.score for s in first), reverse=True)
    assert LocalRanker().ranked(query, list(reversed(shop)), limit=2)[0] == first
    assert ranker.ranked(query, shop, limit=0)[0] == []


def test_supersession_is_read_from_the_newer_memory() -> None:
    old = mem("project_queue_sqs.md", "Jobs run on SQS", "Background jobs are queued in SQS")
    new = mem(
        "project_queue_kafka.md",
        "Jobs moved to Kafka",
        "Since May background jobs go through Kafka topics",
        'Supersedes "Jobs run on SQS".',
    )
    assert superseded_by([old, new]) == {"project_queue_sqs.md": "project_queue_kafka.md"}
    got = names(LocalRanker(), "why are SQS background jobs piling up?", [old, new])
    assert got == ["project_queue_kafka.md"]


def test_near_duplicate_lessons_are_returned_together() -> None:
    a = mem(
        "feedback_no_sleep_in_tests.md",
        "No sleeps in tests",
        "Never use sleep in tests to wait for async work; poll with a timeout helper",
        type_="feedback",
    )
    b = mem(
        "feedback_wait_helpers.md",
        "Use the wait helper",
        "Reminder: tests waiting on async work should poll with the timeout helper, not sleep",
        type_="feedback",
    )
    other = mem("project_billing.md", "Billing rewrite", "Invoices move to the new billing service")
    assert compute_relations([a, b, other]).near_duplicates == [(a.filename, b.filename)]
    got = names(LocalRanker(), "this test uses sleep to wait for the async job", [a, b, other])
    assert sorted(got) == sorted([a.filename, b.filename])


@pytest.mark.parametrize("seed", range(6))
def test_near_duplicates_of_a_folder_with_common_words_are_every_similar_pair(seed: int) -> None:
    # Words drawn by Zipf-like weights: a few sit in most headers, as a project's name does.
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(40)]
    weights = [1 / (i + 1) for i in range(40)]
    folder = [
        mem(
            f"{kind}_{i}.md",
            " ".join(rng.choices(words, weights, k=rng.randint(1, 3))),
            " ".join(rng.choices(words, weights, k=rng.randint(2, 9))),
            type_=kind,
        )
        for i, kind in enumerate(rng.choices(["feedback", "project", "reference"], k=90))
    ]
    vectors = [relations.header_of(c) for c in folder]
    df = Counter(t for v in vectors for t in v)
    idf = {t: math.log(1.0 + len(folder) / d) for t, d in df.items()}
    weighted = [relations._weighted(v, idf) for v in vectors]
    every_pair = [
        (a.filename, b.filename)
        for (i, a), (j, b) in itertools.combinations(enumerate(folder), 2)
        if a.type == b.type
        and relations._cosine(weighted[i], weighted[j]) >= relations.NEAR_DUPLICATE_MIN_SIMILARITY
    ]
    assert every_pair  # the folder has some twins to find
    stale = superseded_by(folder)
    expected = [(a, b) for a, b in every_pair if stale.get(a) != b and stale.get(b) != a]
    assert compute_relations(folder).near_duplicates == expected


def test_empty_inputs_return_nothing() -> None:
    ranker = LocalRanker()
    assert ranker.ranked("anything", [])[0] == []
    assert ranker.ranked("", [mem("project_x.md", "X", "about x")])[0] == []


def test_two_hundred_near_identical_candidates_yield_only_the_named_one() -> None:
    # Speed at this size is measured in bench/select_latency.py, not asserted here.
    cands = [
        mem(
            f"project_topic_{i}.md",
            f"Topic {i} service notes",
            f"Service {i} handles region {i % 7} traffic and its deploy checklist",
            "- owner: team " + str(i % 5) + "\n- runbook: restart the worker pool\n" * 5,
        )
        for i in range(200)
    ]
    ranker = LocalRanker()
    got = names(ranker, "deploy checklist for region 3", cands)
    # The named one first; any other is one whose text also says "region 3" (i % 7 == 3).
    assert got[0] == "project_topic_3.md"
    assert all(int(fn.split("_")[2].removesuffix(".md")) % 7 == 3 for fn in got)
    assert names(ranker, "restart the worker pool for service 42", cands) == ["project_topic_42.md"]


def _queue_folder() -> list[Candidate]:
    old = mem("project_queue_sqs.md", "Jobs run on SQS", "Background jobs are queued in SQS")
    new = mem(
        "project_queue_kafka.md",
        "Jobs moved to Kafka",
        "Since May background jobs go through Kafka topics",
        'Supersedes "Jobs run on SQS".',
    )
    a = mem(
        "feedback_no_sleep_in_tests.md",
        "No sleeps in tests",
        "Never use sleep in tests to wait for async work; poll with a timeout helper",
        type_="feedback",
    )
    b = mem(
        "feedback_wait_helpers.md",
        "Use the wait helper",
        "Reminder: tests waiting on async work should poll with the timeout helper, not sleep",
        type_="feedback",
    )
    return [old, new, a, b]


def test_relations_are_computed_once_per_directory() -> None:
    folder = _queue_folder()
    rel = compute_relations(folder)
    assert rel.superseded == superseded_by(folder)
    assert rel.superseded == {"project_queue_sqs.md": "project_queue_kafka.md"}
    assert rel.near_duplicates == [("feedback_no_sleep_in_tests.md", "feedback_wait_helpers.md")]


def test_precomputed_relations_give_the_same_ranking() -> None:
    folder = _queue_folder()
    rel = compute_relations(folder)
    ranker = LocalRanker()
    for query in ("why are SQS background jobs piling up?", "this test sleeps to wait for a job"):
        assert ranker.ranked(query, folder, relations=rel)[0] == ranker.ranked(query, folder)[0]


def test_directory_relations_apply_to_a_slice_of_the_directory() -> None:
    folder = _queue_folder()
    rel = compute_relations(folder)
    # The replacement was already shown, so only the stale memory is left to rank:
    # the directory's links still keep it out.
    stale_only = [c for c in folder if c.filename != "project_queue_kafka.md"]
    assert names_with(rel, "why are SQS background jobs piling up?", stale_only) == []
    # A twin outside the candidate list is never invented.
    one_twin = [c for c in folder if c.filename != "feedback_wait_helpers.md"]
    got = names_with(rel, "this test uses sleep to wait for the async job", one_twin)
    assert got == ["feedback_no_sleep_in_tests.md"]


def test_explicit_empty_relations_disable_links() -> None:
    folder = _queue_folder()
    got = names_with(Relations(), "this test uses sleep to wait for the async job", folder)
    assert "feedback_no_sleep_in_tests.md" in got


def names_with(rel: Relations, query: str, cands: list[Candidate]) -> list[str]:
    return [s.filename for s in LocalRanker().ranked(query, cands, relations=rel)[0]]


def _mixed_folder() -> list[Candidate]:
    topics = [
        (
            "project_invoice_pdf.md",
            "Invoice PDF rendering",
            "Invoices render to PDF with weasyprint",
        ),
        (
            "feedback_pdf_fonts.md",
            "Embed fonts in PDFs",
            "Always embed fonts or invoices print boxes",
        ),
        (
            "project_search_reindex.md",
            "Search reindex",
            "Nightly elasticsearch reindex of products",
        ),
        ("reference_grafana.md", "Grafana dashboards", "Which dashboard shows checkout latency"),
        ("project_mobile_push.md", "Mobile push", "Push notifications go through firebase"),
        ("feedback_migrations.md", "Migration order", "Schema migrations ship before the code"),
        ("project_sso_okta.md", "Okta single sign-on", "Staff log in to the admin through okta"),
        (
            "reference_feature_flags.md",
            "Feature flags",
            "Flags live in unleash; roll out by percent",
        ),
    ]
    return [mem(fn, name, desc, type_=fn.split("_")[0]) for fn, name, desc in topics]


def test_two_part_request_returns_a_memory_for_each_part() -> None:
    folder = _mixed_folder()
    query = "the nightly elasticsearch reindex is slow, and the firebase push notifications lag"
    got = names(LocalRanker(), query, folder)
    assert "project_search_reindex.md" in got
    assert "project_mobile_push.md" in got
    assert LocalRanker().ranked("rename the helper fmt_addr to format_address", folder)[0] == []


def test_scores_sum_the_per_term_contributions(shop: list[Candidate]) -> None:
    ranker = LocalRanker()
    query = "retry soft-declined stripe payments from a celery task"
    parts = ranker.contributions(query, shop)
    scores = ranker.scores(query, shop)
    assert parts.keys() == scores.keys()
    for fn, by_term in parts.items():
        assert sum(by_term.values()) == pytest.approx(scores[fn])
        assert all(v > 0 for v in by_term.values())


def test_a_long_word_meets_its_other_forms_by_its_first_letters() -> None:
    folder = [
        mem(
            "project_slskd_limits.md",
            "slskd limits",
            "Only two concurrent searches run; more are queued",
        ),
        mem("project_release.md", "Release train", "Releases go out every second Tuesday"),
        mem("reference_grafana.md", "Grafana boards", "Where the latency dashboards live"),
    ]
    query = "what is the search concurrency of slskd"
    assert names(LocalRanker(), query, folder) == ["project_slskd_limits.md"]
    # "concurrency" reaches "concurrent" through its first six letters only.
    assert "concurrent" in LocalRanker().contributions(query, folder)["project_slskd_limits.md"]
    off = LocalRanker(dataclasses.replace(DEFAULT, prefix_weight=0.0))
    assert "concurrent" not in off.contributions(query, folder)["project_slskd_limits.md"]
