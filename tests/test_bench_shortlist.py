"""bench/_shortlist.py: the local ranker's top K eligible memories, and the gold they hold.

The shortlist is ranked over a real index by the shipped Selector, after its
rules: surfaced and superseded memories are never in it.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import select_quality
from _shortlist import KS, indexed, reach, shortlist
from test_bench_select_quality import write_corpus

QUERY = {
    "project": "alpha",
    "query": "pytest gotcha with the billing invoices",
    "surfaced": ["reference_pytest_usage.md"],
    "recent_tools": [],
    "gold": ["feedback_pytest_gotcha.md", "project_billing.md"],
}


def test_the_shortlist_holds_only_eligible_memories_best_first(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "c", "c", ["alpha"])
    folder = corpus.folder("alpha")
    (folder / "project_billing_v1.md").write_text(
        "---\nname: billing v1\ndescription: pytest gotcha for billing invoices v1\n"
        "type: project\n---\n\n> Superseded (2025-04): see [billing](project_billing.md)\n"
    )
    store, selector = indexed([corpus.projects], tmp_path / "work")
    top = shortlist(selector, store.conn, QUERY, folder, 8)
    assert sorted(top) == ["feedback_pytest_gotcha.md", "project_billing.md"]
    assert shortlist(selector, store.conn, QUERY, folder, 1) == [top[0]]
    got = reach(selector, store.conn, [QUERY, {**QUERY, "gold": []}], corpus.folder)
    assert got.gold == 2
    assert all(got.recall(k) == 1.0 for k in KS)


def test_lopo_reports_each_held_out_projects_shortlist(tmp_path: Path) -> None:
    dev = write_corpus(tmp_path / "dev", "dev", ["alpha", "beta"])
    fit = select_quality.lopo([dev], tmp_path / "work")
    assert sorted(fit["shortlist"]) == ["alpha", "beta"]
    gold = sum(len(q["gold"]) for q in dev.queries)
    assert sum(r.gold for r in fit["shortlist"].values()) == gold
    store, selector = indexed([dev.projects], tmp_path / "shipped")
    rows = dict(select_quality.shortlist_reaches([dev], fit, selector, store.conn))
    assert rows["held-out, pooled"].gold == gold
    assert rows["shipped settings, dev"].recall(8) == 1.0  # descriptions asked verbatim
