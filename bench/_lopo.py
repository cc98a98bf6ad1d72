"""Leave-one-project-out fitting: choose settings on some projects, score them on another.

A figure measured on the projects the settings were tuned on says little about
a folder nobody has seen. Here every choice is made by a staged search that
only looks at the training projects' queries; the held-out project is scored
once, with whatever the search picked. The same search run on every project
gives the settings that ship.

The search is staged (each stage keeps the best of its candidates given the
earlier stages' picks) rather than a full product, which keeps it to minutes.
Ties keep the earlier candidate, and every stage lists the current setting
first, so a change has to be a strict improvement on the training projects.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

C = TypeVar("C", bound=Hashable)


@dataclass(frozen=True, slots=True)
class Outcome:
    """One query's result: counts against gold, and rule violations."""

    project: str
    kind: str
    hits: int
    returned: int
    gold: int
    violations: int = 0
    broken: tuple[str, ...] = ()
    """The rule each violation broke (``surfaced``, ``unknown``, ...), once per file."""
    qid: str = ""

    @property
    def f1(self) -> float:
        if not self.gold:
            return 1.0 if not self.returned else 0.0
        if not self.hits:
            return 0.0
        p, r = self.hits / self.returned, self.hits / self.gold
        return 2 * p * r / (p + r)


def mean_f1(rows: Sequence[Outcome]) -> float:
    """The per-query mean F1 (an empty answer to an empty gold scores 1)."""
    return sum(r.f1 for r in rows) / len(rows) if rows else 0.0


def micro_f1(rows: Sequence[Outcome]) -> float:
    """F1 of hits pooled over all queries (an answer to an empty gold is all false positives)."""
    hits = sum(r.hits for r in rows)
    returned = sum(r.returned for r in rows)
    gold = sum(r.gold for r in rows)
    if not hits:
        return 0.0
    p, r = hits / returned, hits / gold
    return 2 * p * r / (p + r)


def micro_precision(rows: Sequence[Outcome]) -> float:
    returned = sum(r.returned for r in rows)
    return sum(r.hits for r in rows) / returned if returned else 0.0


def micro_recall(rows: Sequence[Outcome]) -> float:
    gold = sum(r.gold for r in rows)
    return sum(r.hits for r in rows) / gold if gold else 0.0


def empty_when_gold_empty(rows: Sequence[Outcome]) -> float:
    empty_gold = [r for r in rows if not r.gold]
    return sum(not r.returned for r in empty_gold) / len(empty_gold) if empty_gold else 1.0


def objective(rows: Sequence[Outcome]) -> float:
    """What the search maximises: per-query mean and pooled F1 in equal parts."""
    return (mean_f1(rows) + micro_f1(rows)) / 2


Stage = Callable[[C, Callable[[C], float]], Iterable[C]]
"""Given the current pick and a training score, the options to choose among."""


@dataclass
class Search(Generic[C]):
    """Staged searches over configurations, scored by ``run`` on chosen projects.

    ``run(config)`` answers every query of every project; results are cached
    per configuration, so folds that reach the same configuration share work.
    """

    run: Callable[[C], list[Outcome]]
    objective: Callable[[Sequence[Outcome]], float] = objective
    _cache: dict[C, list[Outcome]] = field(default_factory=dict)

    def outcomes(self, config: C) -> list[Outcome]:
        if config not in self._cache:
            self._cache[config] = self.run(config)
        return self._cache[config]

    def score(self, config: C, projects: set[str]) -> float:
        return self.objective([r for r in self.outcomes(config) if r.project in projects])

    def fit(self, start: C, projects: set[str], stages: Sequence[Stage[C]]) -> C:
        """The configuration the stages pick, looking only at ``projects``."""
        best = start
        for stage in stages:

            def on_training(c: C) -> float:
                return self.score(c, projects)

            options = list(stage(best, on_training))
            best = max(options, key=on_training) if options else best
        return best


@dataclass(frozen=True, slots=True)
class Fold:
    held_out: str
    config: Hashable
    rows: list[Outcome]


def leave_one_out(
    search: Search[C],
    start: C,
    projects: Sequence[str],
    stages_for: Callable[[set[str]], Sequence[Stage[C]]],
) -> tuple[list[Fold], C]:
    """Per held-out project, the configuration fitted on the rest and its held-out rows;
    plus the configuration fitted on every project. ``stages_for(training)`` builds
    the stages from what the training projects alone may reveal."""
    folds = []
    for held in projects:
        training = set(projects) - {held}
        chosen = search.fit(start, training, stages_for(training))
        rows = [r for r in search.outcomes(chosen) if r.project == held]
        folds.append(Fold(held, chosen, rows))
    everything = set(projects)
    return folds, search.fit(start, everything, stages_for(everything))


def render_folds(folds: Sequence[Fold], everything: Sequence[Outcome]) -> str:
    """Per held-out project, their mean, the pooled held-out rows, and fitted-on-everything."""
    header = f"{'held out':<20}{'n':>5}{'F1':>8}{'microF1':>9}{'empty|gold=[]':>15}{'viol':>6}"
    lines = [header]

    def row(label: str, rows: Sequence[Outcome]) -> str:
        return (
            f"{label:<20}{len(rows):>5}{mean_f1(rows):>8.3f}{micro_f1(rows):>9.3f}"
            f"{empty_when_gold_empty(rows):>15.2f}{sum(r.violations for r in rows):>6}"
        )

    for fold in folds:
        lines.append(row(fold.held_out, fold.rows))
    n = len(folds) or 1
    lines.append(
        f"{'mean of projects':<20}{'':>5}{sum(mean_f1(f.rows) for f in folds) / n:>8.3f}"
        f"{sum(micro_f1(f.rows) for f in folds) / n:>9.3f}"
        f"{sum(empty_when_gold_empty(f.rows) for f in folds) / n:>15.2f}"
        f"{sum(r.violations for f in folds for r in f.rows):>6}"
    )
    lines.append(row("pooled held-out", [r for f in folds for r in f.rows]))
    lines.append(row("fitted on all", everything))
    return "\n".join(lines)
