"""Measure memory selection quality on the coding-memories corpus.

The local ranker is measured end to end, as shipped: the corpus is indexed into
a temporary SQLite file and every query in queries.jsonl goes through
``Selector.run`` (manifest from the index, secret flags, surfaced and tool-doc
exclusions, supersession, ranking, validation). It prints recall, precision and
F1 per query kind plus counts of rule violations. A plain BM25 baseline over
descriptions, given the same exclusions, runs in the same process as a fixed
point of comparison.

Usage: .venv/bin/python bench/select_quality.py [--corpus DIR] [--json]
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

from memoryd import logs
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.select._text import terms
from memoryd.select.candidates import Candidate, load_directory
from memoryd.select.relations import Relations, compute_relations
from memoryd.select.selector import Selector
from memoryd.select.tool_rules import tool_usage_docs

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


def shipped_selector(corpus: Path, workdir: Path) -> Answer:
    """Answers from the real Selector over a real index of the corpus."""
    store = IndexStore(workdir / "index.db")
    Syncer(store).sync_tree(str(corpus / "projects"))
    selector = Selector(sink=lambda _record: None)

    def answer(q: dict[str, Any], folder: Path) -> list[str]:
        params = {
            "query": q["query"],
            "dir": str(folder),
            "surfaced": q["surfaced"],
            "recent_tools": q["recent_tools"],
            "ranker": "local",
        }
        result = selector.run(store.conn, params, str)
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
        violations["surfaced"] += len(set(got) & surfaced)
        violations["recent_tool_doc"] += len(set(got) & true_usage)
        violations["superseded"] += len(set(got) & set(ann["superseded"]))
        violations["over_5"] += len(got) > 5
        violations["unknown"] += len(set(got) - known)
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
        "violations": {v: violations[v] for v in VIOLATIONS},
        "ms_per_query": 1000 * elapsed / max(1, total),
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
    v = ", ".join(f"{k}={n}" for k, n in result["violations"].items())
    lines.append(f"violations: {v}; {result['ms_per_query']:.2f} ms/query")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--json", action="store_true", help="print machine-readable results")
    args = parser.parse_args(argv)
    logs.configure(level="WARNING")  # one selector.run event per query would drown the table
    if not (args.corpus / "queries.jsonl").is_file():
        print(f"corpus not found at {args.corpus} (pass --corpus DIR)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        results = {
            "local": evaluate(args.corpus, shipped_selector(args.corpus, Path(tmp))),
            "baseline": evaluate(args.corpus, with_exclusions(baseline, args.corpus)),
        }
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(render("local ranker", results["local"]))
        print()
        print(render("baseline (BM25 on descriptions)", results["baseline"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
