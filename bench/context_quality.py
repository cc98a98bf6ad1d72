"""Measure prior-session brief quality on the coding-memories session corpus.

For every task in sessions/context_queries.jsonl, loads that project's session
files the way the daemon would (through memoryd.indexer.parse, so corrupted
files arrive as SessionDoc with an error), builds the brief, and reports:

- recall: share of ``relevant_sessions`` cited in the brief text (direct tasks);
- must-mention: share of ``must_mention`` phrases found in the brief text
  (case-insensitive substring, so paraphrases count as misses);
- none: share of ``none`` tasks answered with exactly the no-context message;
- budget: share of briefs within the token budget.

Targets: recall >= 0.9, must-mention >= 0.7, none = 100%, budget = 100%.
The corpus is a development set, so these are not held-out numbers.

Usage: .venv/bin/python bench/context_quality.py [--corpus DIR] [--budget N] [--json] [-v]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from memoryd.indexer.parse import parse_file
from memoryd.paths import SESSION_FILENAME
from memoryd.sessions.brief import SessionDoc, build_brief, estimate_tokens, no_context_message

DEFAULT_CORPUS = Path(__file__).resolve().parents[1].parent / "shared/bench/coding-memories"
TARGETS = {"recall": 0.9, "must_mention": 0.7, "none_exact": 1.0, "within_budget": 1.0}


def load_sessions(folder: Path, project: str) -> list[SessionDoc]:
    """The project's session files, parsed; unusable ones keep their error."""
    docs = []
    for path in sorted(folder.glob(f"*-{project}.md")):
        match = SESSION_FILENAME.match(path.name)
        if match is None or match.group(2) != project:
            continue
        parsed = parse_file(str(path), path.name, path.stat().st_size)
        text = None if parsed.error else path.read_text(encoding="utf-8")
        docs.append(
            SessionDoc(
                path=str(path),
                filename=path.name,
                project=project,
                session=match.group(1),
                text=text,
                error=parsed.error,
            )
        )
    return docs


def evaluate(corpus: Path, budget: int) -> dict[str, Any]:
    folder = corpus / "sessions"
    rows = []
    for line in (folder / "context_queries.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        query = json.loads(line)
        docs = load_sessions(folder, query["project"])
        scope = f"project {query['project']} ({len(docs)} session files)"
        brief = build_brief(query["task"], docs, scope=scope, budget_tokens=budget)
        text = brief.text
        relevant = query["relevant_sessions"]
        phrases = query["must_mention"]
        cited = [name for name in relevant if name in text]
        found = [p for p in phrases if p.lower() in text.lower()]
        rows.append(
            {
                "project": query["project"],
                "task": query["task"],
                "kind": query["kind"],
                "recall": len(cited) / len(relevant) if relevant else None,
                "must_mention": len(found) / len(phrases) if phrases else None,
                "missing": [p for p in phrases if p not in found],
                "none_exact": text == no_context_message(scope)
                if query["kind"] == "none"
                else None,
                "tokens": estimate_tokens(text),
                "within_budget": estimate_tokens(text) <= budget,
                "sessions_read": brief.sessions_read,
                "text": text,
            }
        )
    return {"budget_tokens": budget, "queries": rows, "summary": summarize(rows)}


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def mean(key: str) -> float:
        values = [float(r[key]) for r in rows if r[key] is not None]
        return sum(values) / len(values) if values else float("nan")

    summary = {key: mean(key) for key in TARGETS}
    summary["queries"] = len(rows)
    summary["max_tokens"] = max((r["tokens"] for r in rows), default=0)
    summary["passed"] = all(summary[key] >= target for key, target in TARGETS.items())
    return summary


def print_table(result: dict[str, Any], verbose: bool) -> None:
    if verbose:
        for row in result["queries"]:
            print(f"== [{row['kind']}] {row['project']}: {row['task']}")
            print(f"   recall={row['recall']} must={row['must_mention']} tokens={row['tokens']}")
            if row["missing"]:
                print(f"   missing: {row['missing']}")
            print("   " + row["text"].replace("\n", "\n   "))
    summary = result["summary"]
    print(f"{'metric':<16}{'value':>8}{'target':>9}  ok")
    for key, target in TARGETS.items():
        ok = "yes" if summary[key] >= target else "NO"
        print(f"{key:<16}{summary[key]:>8.3f}{target:>9.2f}  {ok}")
    print(
        f"{summary['queries']} tasks, budget {result['budget_tokens']} tokens, "
        f"largest brief {summary['max_tokens']} tokens"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--budget", type=int, default=600)
    parser.add_argument("--json", action="store_true", help="print the full result as JSON")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every brief")
    args = parser.parse_args(argv)
    queries = args.corpus / "sessions" / "context_queries.jsonl"
    if not queries.is_file():
        print(f"corpus not found: {queries} does not exist (use --corpus DIR)", file=sys.stderr)
        return 2
    result = evaluate(args.corpus, args.budget)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result, args.verbose)
    return 0 if result["summary"]["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
