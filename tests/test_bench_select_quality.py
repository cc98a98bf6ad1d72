"""bench/select_quality.py over several corpora: one leave-one-project-out pool, per-corpus figures.

Two tiny corpora are written for the test (two projects each); the bench's
own code indexes them, runs the staged search with every project held out in
turn, and reports the held-out rows by corpus and by query language.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import select_quality
from _corpora import Corpus, union
from _lopo import Outcome
from _quality_report import render_lopo, summary

MEMORIES = {
    "alpha": {
        "feedback_pytest_gotcha.md": ("pytest xdist gotcha", "pytest -n auto breaks the db tests"),
        "project_billing.md": ("billing rewrite", "invoices move to the new billing service"),
        "reference_pytest_usage.md": ("pytest usage", "how to run pytest with markers"),
    },
    "beta": {
        "feedback_deploy_freeze.md": ("deploy freeze", "no deploys on friday afternoons"),
        "project_search.md": ("search index", "product search uses postgres full text"),
        "user_role.md": ("user role", "the user is a backend engineer"),
    },
    "gamma": {
        "project_offline_maps.md": ("offline maps", "map tiles are cached for offline use"),
        "feedback_gradle_clean.md": ("gradle clean gotcha", "gradle clean wipes the signing keys"),
    },
    "delta": {
        "project_sync.md": ("sync protocol", "inspections sync over a delta protocol"),
        "reference_adb.md": ("adb commands", "adb commands for the test tablets"),
    },
}


def write_corpus(root: Path, name: str, projects: list[str]) -> Corpus:
    queries: list[dict[str, Any]] = []
    annotations: dict[str, dict[str, Any]] = {}
    for project in projects:
        folder = root / "projects" / project
        folder.mkdir(parents=True)
        for filename, (title, description) in MEMORIES[project].items():
            mtype = filename.split("_")[0]
            (folder / filename).write_text(
                f"---\nname: {title}\ndescription: {description}\ntype: {mtype}\n---\n\nBody.\n"
            )
        annotations[project] = {"tool_usage_docs": {}, "superseded": {}}
        for i, (filename, (_title, description)) in enumerate(MEMORIES[project].items()):
            queries.append(
                {
                    "id": f"{project}-{i}",
                    "project": project,
                    "query": description,
                    "surfaced": [],
                    "recent_tools": ["Read"],
                    "gold": [filename],
                    "kind": "direct",
                    "lang": "en" if i else "zh",
                }
            )
        queries.append(
            {
                "id": f"{project}-neg",
                "project": project,
                "query": "write a haiku about autumn",
                "surfaced": [],
                "recent_tools": ["Read"],
                "gold": [],
                "kind": "negative",
            }
        )
    return Corpus(name, root / "projects", queries, annotations)


def test_union_lopo_holds_out_every_project_of_every_corpus(tmp_path: Path) -> None:
    dev = write_corpus(tmp_path / "dev", "dev", ["alpha", "beta"])
    real = write_corpus(tmp_path / "real", "real", ["gamma", "delta"])
    fit = select_quality.lopo([dev, real], tmp_path / "work")
    assert sorted(f.held_out for f in fit["folds"]) == ["alpha", "beta", "delta", "gamma"]
    held = [r for f in fit["folds"] for r in f.rows]
    assert len(held) == len(dev.queries) + len(real.queries)
    owners = {p: c.name for p, c in union([dev, real]).items()}
    langs = {q["id"]: q["lang"] for c in (dev, real) for q in c.queries if "lang" in q}
    text = render_lopo(fit, owners, langs)
    assert "over 4 projects (dev, real)" in text
    assert "\n  dev " in text and "\n  real " in text
    assert "micro F1 by language: en" in text
    direct = [r for r in held if r.kind == "direct"]
    assert sum(r.hits for r in direct) >= len(direct) - 1  # descriptions asked verbatim


def test_evaluate_names_each_broken_rule(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "c", "c", ["alpha"])
    corpus.annotations["alpha"]["tool_usage_docs"] = {"pytest": ["reference_pytest_usage.md"]}
    corpus.queries[:] = [
        {
            "id": "x",
            "project": "alpha",
            "query": "run the tests",
            "kind": "tool_rule",
            "surfaced": ["project_billing.md"],
            "recent_tools": ["Bash", "pytest"],
            "gold": ["feedback_pytest_gotcha.md"],
        }
    ]

    def answer(_q: dict[str, Any], _folder: Path) -> list[str]:
        return [
            "project_billing.md",
            "reference_pytest_usage.md",
            "ghost.md",
            "feedback_pytest_gotcha.md",
        ]

    result = select_quality.evaluate(corpus, answer)
    (row,) = result["rows"]
    assert sorted(row.broken) == ["recent_tool_doc", "surfaced", "unknown"]
    assert row.violations == 3
    s = summary(result["rows"])
    assert s["violations"] == {
        "surfaced": 1,
        "recent_tool_doc": 1,
        "superseded": 0,
        "over_5": 0,
        "unknown": 1,
    }
    assert s["precision"] == 0.25 and s["recall"] == 1.0


def test_summary_pools_hits_and_reports_empty_answers_on_empty_gold() -> None:
    rows = [
        Outcome("p", "direct", 1, 2, 1, qid="a"),
        Outcome("p", "multi", 1, 1, 3, qid="b"),
        Outcome("p", "negative", 0, 0, 0, qid="c"),
        Outcome("p", "negative", 0, 1, 0, qid="d"),
    ]
    s = summary(rows, {"a": "zh", "b": "zh", "c": "en", "d": "en"})
    assert s["precision"] == pytest.approx(2 / 4)
    assert s["recall"] == pytest.approx(2 / 4)
    assert s["empty_when_gold_empty"] == 0.5
    assert s["kind_recall"] == {"direct": 1.0, "multi": pytest.approx(1 / 3)}
    assert s["lang_micro_f1"]["en"] == (2, 0.0)


def test_a_project_in_two_corpora_is_refused(tmp_path: Path) -> None:
    a = write_corpus(tmp_path / "a", "a", ["alpha"])
    b = write_corpus(tmp_path / "b", "b", ["alpha"])
    with pytest.raises(ValueError, match="'alpha' is in both a and b"):
        union([a, b])
