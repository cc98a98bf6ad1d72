"""Measure memory selection quality on the development corpus and on real memory folders.

Two corpora are scored (bench/_corpora.py): the synthetic development corpus
(``../shared/bench/coding-memories``, six projects) and real Claude Code
memory folders that users committed to public repositories
(bench/real/manifest.json; ``bench/real_folders.py build`` rebuilds them under
the ignored bench/data/real/, and bench/real/queries.jsonl holds the queries
and gold written for them).

The headline is leave-one-project-out over the union: every folder of both
corpora is a project; the ranker's tunables (paraphrase groups, field and
concept weights, cut-off) are fitted by a staged search on all the other
projects and the held-out one is scored with what was picked (bench/_lopo.py,
bench/_select_grid.py). The held-out rows are then pooled: over the union (the
headline), per corpus, per folder and per query language (micro F1,
precision, recall, empty answers on empty-gold queries, recall per kind,
violations per rule; bench/_quality_report.py). The settings fitted on every
project are compared with what ships as ``memoryd.select.tuning.DEFAULT``.

The local ranker is measured end to end, as shipped: the corpora are indexed
into a temporary SQLite file and every query goes through ``Selector.run``
(manifest from the index, secret flags, surfaced and tool-doc exclusions,
supersession, ranking, validation). Per corpus it also prints recall,
precision and F1 per query kind for the shipped settings, and a plain BM25
baseline over descriptions, given the same exclusions, as a fixed point of
comparison. Last, the recall of the stage-1 shortlist: the share of gold
memories among the local ranker's top 5 and top 8 eligible memories, held out
and with the shipped settings (bench/_shortlist.py), which no judge given that
shortlist can exceed.

Usage: .venv/bin/python bench/select_quality.py [--corpus DIR] [--real-data DIR] [--no-real]
       [--json] [--no-lopo]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sqlite3
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

from _corpora import (
    DEV_CORPUS,
    REAL_DATA,
    Corpus,
    dev_corpus,
    missing_folders,
    real_corpus,
    union,
)
from _lopo import (
    Outcome,
    Search,
    Stage,
    empty_when_gold_empty,
    leave_one_out,
    micro_f1,
)
from _quality_report import KINDS, VIOLATIONS, lopo_summary, render_lopo, summary
from _select_grid import (
    SEARCH_START,
    GridRanker,
    cutoff_stage,
    groups_reached,
    language_and_links_stage,
    lexicon_stage,
    scoring_stage,
)
from _shortlist import NOTHING, Reach, as_json, indexed, reach, render_reach

from memoryd import logs
from memoryd.select._text import terms
from memoryd.select.candidates import Candidate
from memoryd.select.local import LocalRanker
from memoryd.select.manifest import candidates_for
from memoryd.select.relations import Relations
from memoryd.select.selector import Selector
from memoryd.select.tool_rules import tool_usage_docs
from memoryd.select.tuning import Tuning
from memoryd.select.wiring import select_unrecorded

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


def shipped_selector(
    trees: Path | Sequence[Path], workdir: Path, ranker: LocalRanker | None = None
) -> Answer:
    """Answers from the real Selector over one real index of ``trees`` (``ranker`` swapped in)."""
    store, selector = indexed([trees] if isinstance(trees, Path) else trees, workdir, ranker)
    return answers_of(selector, store.conn)


def answers_of(selector: Selector, conn: sqlite3.Connection) -> Answer:
    """Each query's answer from ``selector`` over the index open on ``conn``."""

    def answer(q: dict[str, Any], folder: Path) -> list[str]:
        params = {
            "query": q["query"],
            "dir": str(folder),
            "surfaced": q["surfaced"],
            "recent_tools": q["recent_tools"],
            "ranker": "local",
        }
        result = select_unrecorded(selector, conn, params)
        return [s["filename"] for s in result["selected"]]

    return answer


def with_exclusions(
    rank: Ranker, corpus: Corpus, selector: Selector, conn: sqlite3.Connection
) -> Answer:
    """The selector's exclusions applied by hand around a bare ranking function, over the
    candidates and links ``selector`` reads from the index open on ``conn``."""
    folders: dict[Path, tuple[list[Candidate], Relations]] = {}

    def answer(q: dict[str, Any], folder: Path) -> list[str]:
        if folder not in folders:
            manifest = selector.manifests.get(conn, str(folder))
            cands = [
                c
                for _, c in candidates_for(conn, manifest, "")
                if f"{folder.name}/{c.filename}" not in corpus.secrets
            ]
            folders[folder] = (cands, manifest.relations)
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


def evaluate(corpus: Corpus, answer: Answer) -> dict[str, Any]:
    known_files: dict[str, set[str]] = {}
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0, 0.0])
    violations: Counter[str] = Counter()
    rows: list[Outcome] = []
    elapsed = 0.0
    for q in corpus.queries:
        proj = q["project"]
        folder = corpus.folder(proj)
        if proj not in known_files:
            known_files[proj] = {p.name for p in folder.glob("*.md")}
        surfaced = set(q["surfaced"])
        start = time.perf_counter()
        got = answer(q, folder)
        elapsed += time.perf_counter() - start
        ann = corpus.annotations[proj]
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
            Outcome(
                proj,
                q["kind"],
                hits,
                len(set(got)),
                len(set(q["gold"])),
                sum(broken.values()),
                tuple(rule for rule, n in broken.items() for _ in range(n)),
                q.get("id", ""),
            )
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


def trees(corpora: Sequence[Corpus]) -> list[Path]:
    return [c.projects for c in corpora]


def lopo(corpora: Sequence[Corpus], workdir: Path) -> dict[str, Any]:
    """Fit on all projects but one, score that one, for each project of every corpus;
    and fit on all of them."""
    owners = union(corpora)
    grid = GridRanker()
    store, selector = indexed(trees(corpora), workdir, grid)
    answer = answers_of(selector, store.conn)

    def run(tuning: Tuning) -> list[Outcome]:
        grid.tuning = tuning
        return [row for c in corpora for row in evaluate(c, answer)["rows"]]

    queries = [q for c in corpora for q in c.queries]

    def stages(training: set[str]) -> list[Stage[Tuning]]:
        # Only the training queries say which paraphrase groups prompts reach.
        reached = groups_reached(q["query"] for q in queries if q["project"] in training)
        return [lexicon_stage(reached), scoring_stage, language_and_links_stage, cutoff_stage]

    search = Search(run)
    folds, fitted = leave_one_out(search, SEARCH_START, sorted(owners), stages)
    # Each held-out project's shortlist, ranked with the settings fitted without it.
    held_reach: dict[str, Reach] = {}
    for fold in folds:
        grid.tuning = cast(Tuning, fold.config)
        corpus = owners[fold.held_out]
        mine = [q for q in corpus.queries if q["project"] == fold.held_out]
        held_reach[fold.held_out] = reach(selector, store.conn, mine, corpus.folder)
    return {
        "folds": folds,
        "fitted": fitted,
        "fitted_rows": search.outcomes(fitted),
        "shortlist": held_reach,
    }


def shortlist_reaches(
    corpora: Sequence[Corpus],
    fit: dict[str, Any] | None,
    selector: Selector,
    conn: sqlite3.Connection,
) -> list[tuple[str, Reach]]:
    """Shortlist recall held out (pooled, then per corpus) and with the shipped settings."""
    rows: list[tuple[str, Reach]] = []
    if fit is not None:
        held: dict[str, Reach] = fit["shortlist"]
        rows.append(("held-out, pooled", sum(held.values(), NOTHING)))
        for c in corpora:
            mine = {q["project"] for q in c.queries}
            rows.append((f"  {c.name}", sum((held[p] for p in sorted(mine)), NOTHING)))
    for c in corpora:
        rows.append((f"shipped settings, {c.name}", reach(selector, conn, c.queries, c.folder)))
    return rows


def load_corpora(args: argparse.Namespace) -> list[Corpus]:
    """The corpora asked for that are present; says on stderr what is missing and why."""
    corpora = []
    if (args.corpus / "queries.jsonl").is_file():
        corpora.append(dev_corpus(args.corpus))
    else:
        print(f"development corpus not found at {args.corpus} (pass --corpus DIR)", file=sys.stderr)
    if not args.no_real:
        real = real_corpus(args.real_data)
        absent = missing_folders(real)
        if absent:
            print(
                f"real folders missing under {real.projects} ({', '.join(absent)}): "
                "run .venv/bin/python bench/real_folders.py build (or pass --no-real)",
                file=sys.stderr,
            )
        else:
            corpora.append(real)
    return corpora


def _plain(value: object) -> object:
    """A per-query :class:`Outcome` (a dataclass) in ``--json`` output, as its fields."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--corpus", type=Path, default=DEV_CORPUS, help="the development corpus")
    parser.add_argument("--real-data", type=Path, default=REAL_DATA, help="built real folders")
    parser.add_argument("--no-real", action="store_true", help="score the development corpus only")
    parser.add_argument("--json", action="store_true", help="print machine-readable results")
    parser.add_argument("--no-lopo", action="store_true", help="skip the leave-one-out search")
    args = parser.parse_args(argv)
    logs.configure(level="WARNING")  # one selector.run event per query would drown the table
    corpora = load_corpora(args)
    if not corpora or (not args.no_real and all(c.name != "real" for c in corpora)):
        return 2
    owners = {p: c.name for p, c in union(corpora).items()}
    langs = {q["id"]: q["lang"] for c in corpora for q in c.queries if "lang" in q}
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "lopo").mkdir()
        (Path(tmp) / "shipped").mkdir()
        fit = None if args.no_lopo else lopo(corpora, Path(tmp) / "lopo")
        store, selector = indexed(trees(corpora), Path(tmp) / "shipped")
        shipped = answers_of(selector, store.conn)
        results = {
            c.name: {
                "local": evaluate(c, shipped),
                "baseline": evaluate(c, with_exclusions(baseline, c, selector, store.conn)),
            }
            for c in corpora
        }
        reaches = shortlist_reaches(corpora, fit, selector, store.conn)
    if args.json:
        out: dict[str, Any] = {}
        for name, pair in results.items():
            out[name] = {}
            for key, result in pair.items():
                out[name][key] = {**result, "summary": summary(result.pop("rows"), langs)}
        if fit is not None:
            out["lopo"] = lopo_summary(fit, owners, langs)
        out["shortlist"] = {label: as_json(r) for label, r in reaches}
        print(json.dumps(out, indent=2, default=_plain))
        return 0
    if fit is not None:
        print(render_lopo(fit, owners, langs))
    print()
    print(render_reach(reaches))
    for name, pair in results.items():
        print()
        print(render(f"[{name}] local ranker as shipped (not held-out)", pair["local"]))
        print()
        print(render(f"[{name}] baseline (BM25 on descriptions)", pair["baseline"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
