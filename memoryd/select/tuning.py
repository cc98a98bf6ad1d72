"""The local ranker's tunable settings, and the cut-off that turns scores into an answer.

:class:`Tuning`'s defaults (:data:`DEFAULT`) are what the leave-one-project-out
search picks on every development project. A result
must clear three bars: an absolute floor, a share of the best hit, and the
folder's mean score for the query plus ``standout`` standard deviations.
Memories already surfaced compete but are never returned.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memoryd.select._lexicon import EARNED

if TYPE_CHECKING:
    from memoryd.select.relations import Relations

CALIBRATION_MIN_SIZE = 30
"""A smaller folder is measured as if the missing memories scored zero (else one strong hit
among three would not stand out)."""


@dataclass(frozen=True, slots=True)
class Tuning:
    """One setting of every tunable choice (hashable: benches cache by it)."""

    field_weights: tuple[float, float, float, float] = (1.5, 2.5, 2.0, 0.6)
    """BM25F weight of the filename, name, description and body."""
    concept_weight: float = 0.6
    """A match through a paraphrase group counts this much of a word match."""
    absolute_floor: float = 0.65
    """Minimum normalised score for anything to be returned."""
    relative_floor: float = 0.6
    """Results must score at least this fraction of the best hit."""
    standout: float = 2.5
    """Standard deviations above the folder's mean score a result must reach."""
    gram_weight: float = 0.5
    """Weight of a character bigram of Chinese, Japanese, Korean or Thai text against a word's."""
    unseen_gram_share: float = 0.0
    """How much of a query bigram no memory holds (mostly the seam of two words) counts in
    the score's yardstick."""
    prefix_weight: float = 0.3
    """Weight of a match with a folder word sharing a query word's first letters (0: off)."""
    lexicon: frozenset[str] | None = EARNED
    """Paraphrase groups in use, by label (None: every group in ``_lexicon``)."""


DEFAULT = Tuning()


def one_per_lesson(scores: Mapping[str, float], relations: Relations) -> list[float]:
    """The scores as a distribution in which near-duplicates count once (their best score):
    copies of one lesson must not raise the bar each of them is measured against."""
    parent: dict[str, str] = {}  # only linked memories; the others are their own root

    def root(fn: str) -> str:
        while (up := parent.get(fn, fn)) != fn:
            grand = parent.get(up, up)
            parent[fn] = grand
            fn = grand
        return fn

    for a, b in relations.near_duplicates:
        if a in scores and b in scores:
            parent[root(a)] = root(b)
    if not parent:
        return list(scores.values())
    best: dict[str, float] = {}
    for fn, s in scores.items():
        r = root(fn) if fn in parent else fn
        best[r] = max(best.get(r, s), s)
    return list(best.values())


def cut(
    scores: Mapping[str, float],
    shown: Collection[str],
    tuning: Tuning,
    population: Sequence[float] | None = None,
    whole: Collection[str] = (),
) -> list[str]:
    """The candidates that clearly help, best first; ``shown`` ones compete but are dropped.

    ``population`` is the distribution the standout bar is measured on (default:
    ``scores``). Candidates in ``whole`` hold every content word of the prompt:
    they need not stand out.
    """
    top = max(scores.values(), default=None)
    if top is None or top < tuning.absolute_floor:
        return []
    bar = max(tuning.absolute_floor, tuning.relative_floor * top)
    standout = bar
    if tuning.standout > 0:
        values = list(scores.values() if population is None else population)
        values += [0.0] * (CALIBRATION_MIN_SIZE - len(values))
        mean = sum(values) / len(values)
        spread = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
        standout = max(bar, mean + tuning.standout * spread)
    kept = [
        (fn, s)
        for fn, s in scores.items()
        if s >= (bar if fn in whole else standout) and fn not in shown
    ]
    kept.sort(key=lambda kv: (-kv[1], kv[0]))
    return [fn for fn, _ in kept]
