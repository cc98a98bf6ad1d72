"""Measure memory selection quality on the coding-memories corpus.

The headline is leave-one-project-out: the ranker's tunables (paraphrase
groups, field and concept weights, cut-off) are fitted by a staged search on
five projects and the sixth is scored with what was picked (bench/_lopo.py,
bench/_select_grid.py); the table shows each held-out project, their mean, and
the settings fitted on every project. Those last are what ships as
``memoryd.select.tuning.DEFAULT``; the bench says whether they still agree.

The local ranker is measured end to end, as shipped: the corpus is indexed into
a temporary SQLite file and every query in queries.jsonl goes through
``Selector.run`` (manifest from the index, secret flags, surfaced and tool-doc
exclusions, supersession, ranking, validation). It prints recall, precision and
F1 per query kind (per-query mean, and micro F1 pooled over all queries) plus
counts of rule violations. A plain BM25 baseline over
descriptions, given the same exclusions, runs in the same process as a fixed
point of comparison.

Usage: .venv/bin/python bench/select_quality.py [--corpus DIR] [--json] [--no-lopo]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from _lopo import (
    Outcome,
    Search,
    Stage,
    empty_when_gold_empty,
    leave_one_out,
    mean_f1,
    micro_f1,
    render_folds,
)
from _select_grid import (
    SEARCH_START,
    GridRanker,
    cutoff_stage,
    describe,
    groups_reached,
    lexicon_stage,
    scoring_stage,
)

from memoryd import logs
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.select._lexicon import GROUP_LABELS
from memoryd.select._text import terms
from memoryd.select.candidates import Candidate, load_directory
from memoryd.select.local import LocalRanker
from memoryd.select.relations import Relations, compute_relations
from memoryd.select.selector import Selector
from memoryd.select.service import select_unrecorded
from memoryd.select.tool_rules import tool_usage_docs
from memoryd.select.tuning import DEFAULT, Tuning

DEFAULT_CORPUS = Path(__file__).resolve().parents[1].parent / "shared/bench/coding-memories"
KINDS = ("direct", "paraphrase", "multi", "negative", "tool_rule", "surfaced", "stale")
VIOLATIONS = ("surfaced", "recent_tool_doc", "superseded", "over_5", "unknown")

Answer = Callable[[dict[str, Any], Path], list[str]]
Ranker = Callable[[str, Sequence[Candidate], Relations], list[str]]


def baseline(query: str, cands: Sequence[Candidate], relations: Relations) -> list[str]:
    """Plain BM25 over descriptions, keeping hits within half of the top score."""
    q = set(terms(query))
    docs = [terms(c.description) for c in cands]
    if not q or not docs:
        return []
    n, avg = len(docs), max(1.0, sum(map(len, docs)) / len(docs))
    df = Counter(t for d in docs for t in set(d))
    scores: list[tuple[float, str]] = []
    for c, d in zip(cands, docs, strict=True):
        tf = Counter(d)
        s = 0.0
        for t in q & tf.keys():
            idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
            s += idf * tf[t] * 2.2 / (tf[t] + 1.2 * (0.25 + 0.75 * len(d) / avg))
        scores.append((s, c.filename))
    scores.sort(key=lambda x: (-x[0], x[1]))
    top = scores[0][0]
    if top < 3.0:
        return []
    return [fn for s, fn in scores[:5] if s >= 0.5 * top]


def shipped_selector(tree: Path, workdir: Path, ranker: LocalRanker | None = None) -> Answer:
    """Answers from the real Selector over a real index of ``tree`` (``ranker`` swapped in)."""
    store = IndexStore(workdir / "index.db")
    Syncer(store).sync_tree(str(tree))
    selector = Selector()
    if ranker is not None:
        selector.local = ranker

    def answer(q: dict[str, Any], folder: Path) -> list[str]:
        params = {
            "query": q["query"],
            "dir": str(folder),
            "surfaced": q["surfaced"],
            "recent_tools": q["recent_tools"],
            "ranker": "local",
        }
        result = select_unrecorded(selector, store.conn, params)
        return [s["filename"] for s in result["selected"]]

    return answer


def with_exclusions(rank: Ranker, corpus: Path) -> Answer:
    """The selector's exclusions applied by hand around a bare ranking function."""
    secrets = {
        line.split("\t")[0]
        for line in (corpus / "secrets_files.txt").read_text().splitlines()
        if line and not line.startswith("#")
    }
    folders: dict[Path, tuple[list[Candidate], Relations]] = {}

    def answer(q: dict[str, Any], folder: Path) -> list[str]:
        if folder not in folders:
            cands = [
                c
                for c in load_directory(folder)
                if f"projects/{folder.name}/{c.filename}" not in secrets
            ]
            folders[folder] = (cands, compute_relations(cands))
        everything, related = folders[folder]
        skip = set(q["surfaced"]) | tool_usage_docs(everything, q["recent_tools"])
        skip |= set(related.superseded)
        return rank(q["query"], [c for c in everything if c.filename not in skip], related)

    return answer


def prf(got: Sequence[str], gold: Sequence[str]) -> tuple[float, float, float]:
    """Per-query precision, recall and F1; an empty answer to an empty gold is perfect."""
    g, a = set(gold), set(got)
    if not g:
        return (1.0, 1.0, 1.0) if not a else (0.0, 0.0, 0.0)
    hit = len(g & a)
    p = hit / len(a) if a else 0.0
    r = hit / len(g)
    return p, r, (2 * p * r / (p + r) if hit else 0.0)


def evaluate(corpus: Path, answer: Answer) -> dict[str, Any]:
    annotations = json.loads((corpus / "annotations.json").read_text())
    known_files: dict[str, set[str]] = {}
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0, 0.0])
    violations: Counter[str] = Counter()
    rows: list[Outcome] = []
    elapsed = 0.0
    for line in (corpus / "queries.jsonl").read_text().splitlines():
        q = json.loads(line)
        proj = q["project"]
        folder = corpus / "projects" / proj
        if proj not in known_files:
            known_files[proj] = {p.name for p in folder.glob("*.md")}
        surfaced = set(q["surfaced"])
        start = time.perf_counter()
        got = answer(q, folder)
        elapsed += time.perf_counter() - start
        ann = annotations[proj]
        true_usage = {f for t in q["recent_tools"] for f in ann["tool_usage_docs"].get(t, [])}
        known = known_files[proj] - {"MEMORY.md"}
        broken = {
            "surfaced": len(set(got) & surfaced),
            "recent_tool_doc": len(set(got) & true_usage),
            "superseded": len(set(got) & set(ann["superseded"])),
            "over_5": int(len(got) > 5),
            "unknown": len(set(got) - known),
        }
        violations.update(broken)
        hits = len(set(got) & set(q["gold"]))
        rows.append(
            Outcome(proj, q["kind"], hits, len(set(got)), len(set(q["gold"])), sum(broken.values()))
        )
        p, r, f = prf(got, q["gold"])
        for key in (q["kind"], "overall"):
            row = sums[key]
            row[0] += 1
            row[1] += p
            row[2] += r
            row[3] += f
            row[4] += not got
    table = {
        kind: {
            "n": int(row[0]),
            "precision": row[1] / row[0],
            "recall": row[2] / row[0],
            "f1": row[3] / row[0],
            "empty_rate": row[4] / row[0],
        }
        for kind, row in sums.items()
    }
    total = int(sums["overall"][0])
    return {
        "table": table,
        "micro_f1": micro_f1(rows),
        "empty_when_gold_empty": empty_when_gold_empty(rows),
        "violations": {v: violations[v] for v in VIOLATIONS},
        "ms_per_query": 1000 * elapsed / max(1, total),
        "rows": rows,
    }


def render(title: str, result: dict[str, Any]) -> str:
    lines = [title, f"{'kind':<11}{'n':>4}{'recall':>8}{'prec':>7}{'F1':>7}{'empty':>7}"]
    for kind in (*KINDS, "overall"):
        row = result["table"].get(kind)
        if row:
            lines.append(
                f"{kind:<11}{row['n']:>4}{row['recall']:>8.3f}{row['precision']:>7.3f}"
                f"{row['f1']:>7.3f}{row['empty_rate']:>7.2f}"
            )
    lines.append(
        f"micro F1 {result['micro_f1']:.3f}; empty answers on empty-gold queries "
        f"{result['empty_when_gold_empty']:.2f}"
    )
    v = ", ".join(f"{k}={n}" for k, n in result["violations"].items())
    lines.append(f"violations: {v}; {result['ms_per_query']:.2f} ms/query")
    return "\n".join(lines)


def lopo(corpus: Path, workdir: Path) -> dict[str, Any]:
    """Fit on five projects, score the sixth, for each project; and fit on all six."""
    grid = GridRanker()
    answer = shipped_selector(corpus / "projects", workdir, grid)

    def run(tuning: Tuning) -> list[Outcome]:
        grid.tuning = tuning
        rows: list[Outcome] = evaluate(corpus, answer)["rows"]
        return rows

    queries = [json.loads(line) for line in (corpus / "queries.jsonl").read_text().splitlines()]
    projects = sorted({q["project"] for q in queries})

    def stages(training: set[str]) -> list[Stage[Tuning]]:
        # Only the training queries say which paraphrase groups prompts reach.
        reached = groups_reached(q["query"] for q in queries if q["project"] in training)
        return [lexicon_stage(reached), scoring_stage, cutoff_stage]

    search = Search(run)
    folds, fitted = leave_one_out(search, SEARCH_START, projects, stages)
    return {"folds": folds, "fitted": fitted, "fitted_rows": search.outcomes(fitted)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--json", action="store_true", help="print machine-readable results")
    parser.add_argument("--no-lopo", action="store_true", help="skip the leave-one-out search")
    args = parser.parse_args(argv)
    logs.configure(level="WARNING")  # one selector.run event per query would drown the table
    if not (args.corpus / "queries.jsonl").is_file():
        print(f"corpus not found at {args.corpus} (pass --corpus DIR)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "lopo").mkdir()
        (Path(tmp) / "shipped").mkdir()
        fit = None if args.no_lopo else lopo(args.corpus, Path(tmp) / "lopo")
        results = {
            "local": evaluate(
                args.corpus, shipped_selector(args.corpus / "projects", Path(tmp) / "shipped")
            ),
            "baseline": evaluate(args.corpus, with_exclusions(baseline, args.corpus)),
        }
    if args.json:
        for result in results.values():
            result.pop("rows")
        if fit is not None:
            results["lopo"] = lopo_summary(fit)
        print(json.dumps(results, indent=2))
        return 0
    if fit is not None:
        print(render_lopo(fit))
        print()
    print(
        render("local ranker as shipped (fitted on every project: not held-out)", results["local"])
    )
    print()
    print(render("baseline (BM25 on descriptions)", results["baseline"]))
    return 0


def lopo_summary(fit: dict[str, Any]) -> dict[str, Any]:
    folds = fit["folds"]
    return {
        "held_out": {
            f.held_out: {
                "f1": mean_f1(f.rows),
                "micro_f1": micro_f1(f.rows),
                "empty_when_gold_empty": empty_when_gold_empty(f.rows),
                "violations": sum(r.violations for r in f.rows),
                "tuning": describe(f.config),
            }
            for f in folds
        },
        "mean_f1": sum(mean_f1(f.rows) for f in folds) / len(folds),
        "mean_micro_f1": sum(micro_f1(f.rows) for f in folds) / len(folds),
        "fitted_on_all": describe(fit["fitted"]),
        "shipped_matches_fit": fit["fitted"] == DEFAULT,
    }


def render_lopo(fit: dict[str, Any]) -> str:
    lines = ["leave-one-project-out (tunables fitted on the other five projects)"]
    lines.append(render_folds(fit["folds"], fit["fitted_rows"]))
    for f in fit["folds"]:
        lines.append(f"  fitted without {f.held_out}: {describe(f.config)}")
    fitted: Tuning = fit["fitted"]
    lines.append(f"  fitted on all: {describe(fitted)}")
    kept = sorted(fitted.lexicon or GROUP_LABELS)
    lines.append(f"  paraphrase groups kept on all ({len(kept)}): {' '.join(kept)}")
    votes = Counter(g for f in fit["folds"] for g in (f.config.lexicon or GROUP_LABELS))
    by_votes = ", ".join(
        f"{g} {n}" for g, n in sorted(votes.items(), key=lambda kv: (-kv[1], kv[0]))
    )
    lines.append(f"  folds (of {len(fit['folds'])}) keeping each group: {by_votes}")
    lines.append(
        "  shipped DEFAULT "
        + (
            "matches the fit on all projects"
            if fitted == DEFAULT
            else f"differs: {describe(DEFAULT)}"
        )
    )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
