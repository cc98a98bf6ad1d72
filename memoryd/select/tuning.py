"""The local ranker's tunable settings, and the cut-off that turns scores into an answer.

A result clears an absolute floor, a share of the best hit, and the folder's
mean score plus ``standout`` standard deviations.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memoryd.select._lexicon import EARNED

if TYPE_CHECKING:
    from memoryd.select.relations import Relations

CALIBRATION_MIN_SIZE = 30  # a smaller folder's missing memories count as zeros


@dataclass(frozen=True, slots=True)
class Tuning:
    """One setting of every tunable choice (hashable: benches cache by it)."""

    field_weights: tuple[float, float, float, float] = (1.5, 2.5, 2.0, 0.6)  # analysis.FIELDS
    concept_weight: float = 0.6  # a match through a paraphrase group, against a word's
    absolute_floor: float = 0.65
    relative_floor: float = 0.6  # of the best hit
    standout: float = 2.5  # standard deviations above the mean
    gram_weight: float = 0.5  # a CJK or Thai bigram, against a word
    unseen_gram_share: float = 0.0  # of a bigram no memory holds, in the yardstick
    prefix_weight: float = 0.3  # a match by a word's first letters (0: off)
    lexicon: frozenset[str] | None = EARNED  # paraphrase groups in use (None: all)


DEFAULT = Tuning()


def one_per_lesson(scores: Mapping[str, float], relations: Relations) -> list[float]:
    """The scores as a distribution in which near-duplicates count once (their best score)."""
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
    ``population``: what the standout bar is measured on (default ``scores``); those in
    ``whole`` hold every content word of the prompt and need not stand out."""
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
