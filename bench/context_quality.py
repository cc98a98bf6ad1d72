"""Measure prior-session brief quality on the coding-memories session corpus.

For every task in sessions/context_queries.jsonl, loads that project's session
files the way the daemon would (through memoryd.indexer.parse, so corrupted
files arrive as SessionDoc with an error), builds the brief, and reports:

- recall: share of ``relevant_sessions`` cited in the brief text (direct tasks);
- must-mention: share of ``must_mention`` phrases found in the brief text
  (case-insensitive substring, so paraphrases count as misses);
- none: share of ``none`` tasks answered with exactly the no-context message;
- budget: share of briefs within the token budget.

Targets: recall >= 0.95, must-mention >= 0.7, none = 100%, budget = 100%.

The headline is leave-one-project-out: the brief's thresholds (how relevant a
session must be, the bonus for task words that sit together, how much of the
task an entry of a background session must match) are fitted on two projects'
tasks and the third project is scored with what was picked; the fit on all
three is what brief.py ships. The table after it is the shipped brief on every
task (tuned on all of them, so not a held-out figure).

Usage: .venv/bin/python bench/context_quality.py [--corpus DIR ...] [--budget N] [--json] [-v]
       [--no-lopo]

With several ``--corpus`` (the development corpus and bench/context_unseen),
the leave-one-project-out runs over the union of their projects.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from itertools import product
from pathlib import Path
from typing import Any

from _lopo import Outcome, Search, leave_one_out, render_folds

from memoryd.indexer.parse import parse_file
from memoryd.paths import SESSION_FILENAME
from memoryd.sessions import _collect as collect_module
from memoryd.sessions import brief as brief_module
from memoryd.sessions._sections import SessionDoc
from memoryd.sessions.brief import build_brief, estimate_tokens, no_context_message

DEFAULT_CORPUS = Path(__file__).resolve().parents[1].parent / "shared/bench/coding-memories"
TARGETS = {"recall": 0.95, "must_mention": 0.7, "none_exact": 1.0, "within_budget": 1.0}
TUNABLES = {
    "SESSION_THRESHOLD": (0.35, 0.45, 0.55, 0.3, 0.25),
    "PAIR_BONUS": (0.05, 0.1, 0.2, 0.3),
    "BACKGROUND_MATCH": (0.2, 0.3, 0.4),
}
"""The brief's thresholds the leave-one-project-out search may change, and their options."""
HOLDER = {
    "SESSION_THRESHOLD": brief_module,
    "PAIR_BONUS": brief_module,
    "BACKGROUND_MATCH": collect_module,
}
"""The module each threshold lives in (which sessions are read, how their entries score)."""
Setting = tuple[tuple[str, float], ...]


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
        text = brief["text"]
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
                "cited": sorted(
                    {f["source"]["filename"] for f in brief["findings"]}
                    | {
                        f["conflicts_with"]["filename"]
                        for f in brief["findings"]
                        if "conflicts_with" in f
                    }
                ),
                "relevant": relevant,
                "sessions_read": brief["sessions_read"],
                "text": text,
            }
        )
    return {"budget_tokens": budget, "queries": rows, "summary": summarize(rows)}


@contextmanager
def applied(setting: Setting) -> Iterator[None]:
    """The brief's modules with ``setting``'s thresholds for the duration (restored after)."""
    before = {name: getattr(HOLDER[name], name) for name, _ in setting}
    for name, value in setting:
        setattr(HOLDER[name], name, value)
    try:
        yield
    finally:
        for name, value in before.items():
            setattr(HOLDER[name], name, value)


def as_outcome(row: dict[str, Any]) -> Outcome:
    """A task as a selection: the sessions the brief cites against the relevant ones.

    A ``none`` task has no relevant session: only the exact no-context answer is right.
    """
    cited, relevant = set(row["cited"]), set(row["relevant"])
    if row["kind"] == "none":
        return Outcome(row["project"], "none", 0, 0 if row["none_exact"] else max(1, len(cited)), 0)
    return Outcome(row["project"], row["kind"], len(cited & relevant), len(cited), len(relevant))


def recall_or_silence(rows: Sequence[Outcome]) -> float:
    """The brief's targets as one number: recall on tasks with history, exactness on the
    others. Ties keep the earlier option (the current setting comes first)."""
    per_task = [r.hits / r.gold if r.gold else float(not r.returned) for r in rows]
    return sum(per_task) / max(1, len(per_task))


def lopo(corpora: Sequence[Path], budget: int) -> dict[str, Any]:
    """Fit the thresholds on all projects of ``corpora`` but one, score that one; and
    fit on all of them (project names must not repeat across corpora)."""

    def run(setting: Setting) -> list[Outcome]:
        with applied(setting):
            return [
                as_outcome(r) for corpus in corpora for r in evaluate(corpus, budget)["queries"]
            ]

    def grid(current: Setting, _score: object) -> list[Setting]:
        names = list(TUNABLES)
        return [current] + [
            tuple(zip(names, values, strict=True)) for values in product(*TUNABLES.values())
        ]

    shipped: Setting = tuple((name, float(getattr(HOLDER[name], name))) for name in TUNABLES)
    start: Setting = tuple((name, options[1]) for name, options in TUNABLES.items())
    search = Search(run, recall_or_silence)
    projects = sorted({r.project for r in search.outcomes(start)})
    folds, fitted = leave_one_out(search, start, projects, lambda _training: [grid])
    return {"folds": folds, "fitted": fitted, "rows": search.outcomes(fitted), "shipped": shipped}


def render_lopo(fit: dict[str, Any]) -> str:
    lines = ["leave-one-project-out (thresholds fitted on the other projects' tasks)"]
    lines.append(render_folds(fit["folds"], fit["rows"]).replace("empty|gold=[]", "none exact"))
    for fold in fit["folds"]:
        recall = [r.hits / r.gold for r in fold.rows if r.gold]
        lines.append(
            f"  {fold.held_out}: recall {sum(recall) / max(1, len(recall)):.3f}; "
            f"fitted on the others: {dict(fold.config)}"
        )
    held = [r for fold in fit["folds"] for r in fold.rows if r.gold]
    lines.append(
        f"  held-out recall (pooled): {sum(r.hits / r.gold for r in held) / len(held):.3f}"
    )
    same = fit["fitted"] == fit["shipped"]
    lines.append(
        f"  fitted on all: {dict(fit['fitted'])}; brief.py ships "
        + ("the same" if same else f"something else: {dict(fit['shipped'])}")
    )
    return "\n".join(lines)


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
    parser.add_argument(
        "--corpus",
        type=Path,
        action="append",
        help="a corpus directory (repeat for several: the leave-one-out runs over all their "
        "projects; the table is per corpus); default the development corpus",
    )
    parser.add_argument("--budget", type=int, default=600)
    parser.add_argument("--json", action="store_true", help="print the full result as JSON")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every brief")
    parser.add_argument("--no-lopo", action="store_true", help="skip the leave-one-out search")
    args = parser.parse_args(argv)
    corpora: list[Path] = args.corpus or [DEFAULT_CORPUS]
    for corpus in corpora:
        queries = corpus / "sessions" / "context_queries.jsonl"
        if not queries.is_file():
            print(f"corpus not found: {queries} does not exist (use --corpus DIR)", file=sys.stderr)
            return 2
    fit = None if args.no_lopo else lopo(corpora, args.budget)
    results = {str(corpus): evaluate(corpus, args.budget) for corpus in corpora}
    if args.json:
        out: dict[str, Any] = {"corpora": results}  # keyed by the corpus path as given
        if fit is not None:
            out["lopo"] = {
                "held_out": {f.held_out: dict(f.config) for f in fit["folds"]},
                "fitted_on_all": dict(fit["fitted"]),
                "shipped_matches_fit": fit["fitted"] == fit["shipped"],
            }
        print(json.dumps(out, indent=2))
    else:
        if fit is not None:
            print(render_lopo(fit))
            print()
        for name, result in results.items():
            print(f"shipped brief on {name} (not held-out)")
            print_table(result, args.verbose)
            print()
    return 0 if all(r["summary"]["passed"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
