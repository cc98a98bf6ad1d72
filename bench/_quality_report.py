"""Summaries and tables for bench/select_quality.py, over any subset of scored queries.

The headline is the union leave-one-project-out: the held-out rows of every
fold, pooled. ``summary`` breaks a set of rows down the way the issues quote
them (micro F1, precision and recall pooled over queries, the share of empty
answers where gold is empty, recall per kind, violations per rule, and micro F1
per language when the queries say which), so the same function reports the
pooled figure, each corpus, and each folder.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, cast

from _lopo import (
    Fold,
    Outcome,
    empty_when_gold_empty,
    mean_f1,
    micro_f1,
    micro_precision,
    micro_recall,
    render_folds,
)
from _select_grid import describe

from memoryd.select._lexicon import GROUP_LABELS
from memoryd.select.tuning import DEFAULT, Tuning

KINDS = ("direct", "paraphrase", "multi", "negative", "tool_rule", "surfaced", "stale")
VIOLATIONS = ("surfaced", "recent_tool_doc", "superseded", "over_5", "unknown")


def summary(rows: Sequence[Outcome], langs: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Pooled figures over ``rows``; ``langs`` maps query id to language, when known."""
    by_kind: dict[str, list[Outcome]] = {}
    for r in rows:
        by_kind.setdefault(r.kind, []).append(r)
    broken = Counter(b for r in rows for b in r.broken)
    out: dict[str, Any] = {
        "n": len(rows),
        "micro_f1": micro_f1(rows),
        "precision": micro_precision(rows),
        "recall": micro_recall(rows),
        "mean_f1": mean_f1(rows),
        "empty_when_gold_empty": empty_when_gold_empty(rows),
        "kind_recall": {
            k: micro_recall(by_kind[k]) for k in KINDS if k in by_kind and k != "negative"
        },
        "kind_n": {k: len(v) for k, v in by_kind.items()},
        "violations": {v: broken[v] for v in VIOLATIONS},
    }
    if langs:
        by_lang: dict[str, list[Outcome]] = {}
        for r in rows:
            if r.qid in langs:
                by_lang.setdefault(langs[r.qid], []).append(r)
        out["lang_micro_f1"] = {k: (len(v), micro_f1(v)) for k, v in sorted(by_lang.items())}
    return out


SUMMARY_HEADER = (
    f"{'':<22}{'n':>5}{'microF1':>9}{'P':>7}{'R':>7}{'empty|gold=[]':>15}"
    f"{'multi R':>9}{'para R':>8}{'tool R':>8}  violations (surfaced/tool-doc/superseded/unknown)"
)


def summary_line(label: str, s: Mapping[str, Any]) -> str:
    kr = s["kind_recall"]
    v = s["violations"]

    def rec(kind: str) -> str:
        return f"{kr[kind]:.3f}" if kind in kr else "-"

    return (
        f"{label:<22}{s['n']:>5}{s['micro_f1']:>9.3f}{s['precision']:>7.3f}{s['recall']:>7.3f}"
        f"{s['empty_when_gold_empty']:>15.2f}{rec('multi'):>9}{rec('paraphrase'):>8}"
        f"{rec('tool_rule'):>8}  {v['surfaced']}/{v['recent_tool_doc']}/{v['superseded']}"
        f"/{v['unknown']}"
    )


def kind_line(s: Mapping[str, Any]) -> str:
    parts = [f"{k} {s['kind_recall'][k]:.3f} (n={s['kind_n'][k]})" for k in s["kind_recall"]]
    return "    recall by kind: " + ", ".join(parts)


def render_lopo(fit: Mapping[str, Any], owners: Mapping[str, str], langs: Mapping[str, str]) -> str:
    """The folds, then the pooled held-out rows by corpus, folder and language."""
    folds: list[Fold] = fit["folds"]
    corpora = sorted(set(owners.values()))
    lines = [
        f"leave-one-project-out over {len(folds)} projects ({', '.join(corpora)}): "
        "tunables fitted on the other projects, the held-out one scored",
        render_folds(folds, fit["fitted_rows"]),
    ]
    held = [r for f in folds for r in f.rows]
    lines += ["", "held-out rows, pooled (the headline is the first line)", SUMMARY_HEADER]
    lines.append(summary_line("union", summary(held)))
    for name in corpora:
        rows = [r for r in held if owners[r.project] == name]
        s = summary(rows, langs)
        lines.append(summary_line(f"  {name}", s))
        lines.append(kind_line(s))
        if len(s.get("lang_micro_f1", {})) > 1:
            per = ", ".join(f"{k} {f:.3f} (n={n})" for k, (n, f) in s["lang_micro_f1"].items())
            lines.append(f"    micro F1 by language: {per}")
    lines += ["", "fitted settings"]
    configs = [cast(Tuning, f.config) for f in folds]
    for f, t in zip(folds, configs, strict=True):
        lines.append(f"  without {f.held_out}: {describe(t)}")
    fitted: Tuning = fit["fitted"]
    lines.append(f"  fitted on all: {describe(fitted)}")
    kept = sorted(fitted.lexicon or GROUP_LABELS)
    lines.append(f"  paraphrase groups kept on all ({len(kept)}): {' '.join(kept)}")
    votes = Counter(g for t in configs for g in (t.lexicon or GROUP_LABELS))
    ranked = sorted(votes.items(), key=lambda kv: (-kv[1], kv[0]))
    by_votes = ", ".join(f"{g} {n}" for g, n in ranked)
    lines.append(f"  folds (of {len(folds)}) keeping each group: {by_votes}")
    verdict = "matches the fit on all projects" if fitted == DEFAULT else "differs"
    lines.append(f"  shipped DEFAULT {verdict}: {describe(DEFAULT)}")
    return "\n".join(lines)


def lopo_summary(
    fit: Mapping[str, Any], owners: Mapping[str, str], langs: Mapping[str, str]
) -> dict[str, Any]:
    folds: list[Fold] = fit["folds"]
    held = [r for f in folds for r in f.rows]
    return {
        "union": summary(held),
        "corpora": {
            name: summary([r for r in held if owners[r.project] == name], langs)
            for name in sorted(set(owners.values()))
        },
        "held_out": {
            f.held_out: {**summary(f.rows), "tuning": describe(cast(Tuning, f.config))}
            for f in folds
        },
        "fitted_on_all": describe(fit["fitted"]),
        "shipped_matches_fit": fit["fitted"] == DEFAULT,
    }
