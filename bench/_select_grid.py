"""The search space of the local ranker's tunables, for the leave-one-project-out bench.

Four stages, each given the previous stages' picks:

1. paraphrase groups: a group stays only if switching it off lowers the
   training projects' score (groups that no training query ever reaches
   cannot show that, so they go);
2. scoring: concept weight, field weights and the weight of a prefix match;
3. language and links: the weight of an unspaced-script bigram, the share of
   one that no memory holds in the score's yardstick, and the score a memory
   linked to a returned one needs to come along;
4. cut-off: absolute floor, share of the best hit, and margin over the
   folder's score distribution.

Document analysis is cached across the whole grid (the ranker's own cache,
plus a memo of per-query contributions keyed by the settings that change
them), so the cut-off stage costs little more than the cut itself.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from itertools import product

from memoryd.select._lexicon import CONCEPTS, GROUP_LABELS
from memoryd.select._text import terms
from memoryd.select.candidates import Candidate
from memoryd.select.local import LocalRanker
from memoryd.select.tuning import Tuning

CONCEPT_WEIGHTS = (0.3, 0.45, 0.6)
PREFIX_WEIGHTS = (0.0, 0.3, 0.5)
FIELD_WEIGHTS = ((1.5, 2.5, 2.0, 0.6), (1.5, 3.0, 2.5, 0.4), (1.5, 2.0, 1.5, 0.9))
ABSOLUTE_FLOORS = (0.45, 0.55, 0.65, 0.75)
RELATIVE_FLOORS = (0.4, 0.5, 0.6)
STANDOUTS = (0.0, 1.5, 2.5, 3.5)
GRAM_WEIGHTS = (1.0, 0.7, 0.5)
UNSEEN_GRAM_SHARES = (1.0, 0.6, 0.3, 0.0)

Score = Callable[[Tuning], float]


class GridRanker(LocalRanker):
    """The shipped ranker, remembering each query's contributions per scoring setting."""

    def __init__(self) -> None:
        super().__init__()
        self._memo: dict[tuple[object, ...], dict[str, dict[str, float]]] = {}

    def contributions(
        self, query: str, candidates: Sequence[Candidate]
    ) -> dict[str, dict[str, float]]:
        t = self.tuning
        key = (
            query,
            tuple(c.filename for c in candidates),
            t.field_weights,
            t.concept_weight,
            t.lexicon,
            t.gram_weight,
            t.unseen_gram_share,
            t.prefix_weight,
        )
        if key not in self._memo:
            self._memo[key] = super().contributions(query, candidates)
        return self._memo[key]


SEARCH_START = Tuning(
    field_weights=(1.5, 2.5, 2.0, 0.6),
    concept_weight=0.45,
    absolute_floor=0.65,
    relative_floor=0.5,
    standout=0.0,
    gram_weight=1.0,
    unseen_gram_share=1.0,
    prefix_weight=0.0,
    lexicon=None,
)
"""Where every search begins: the hand-set values from before any fitting, all groups on."""


def groups_reached(queries: Iterable[str]) -> set[str]:
    """Paraphrase groups at least one query word belongs to."""
    return {c[1:] for q in queries for w in terms(q) for c in CONCEPTS.get(w, ())}


def lexicon_stage(reached: set[str]) -> Callable[[Tuning, Score], list[Tuning]]:
    """Keep a group only if switching it off (alone) lowers the training score."""

    def stage(current: Tuning, score: Score) -> list[Tuning]:
        in_use = set(GROUP_LABELS if current.lexicon is None else current.lexicon)
        base = score(current)
        kept = {
            group
            for group in sorted(in_use & reached)
            if score(dataclasses.replace(current, lexicon=frozenset(in_use - {group}))) < base
        }
        return [dataclasses.replace(current, lexicon=frozenset(kept))]

    return stage


def scoring_stage(current: Tuning, _score: Score) -> list[Tuning]:
    return [current] + [
        dataclasses.replace(current, concept_weight=cw, field_weights=fw, prefix_weight=pw)
        for cw, fw, pw in product(CONCEPT_WEIGHTS, FIELD_WEIGHTS, PREFIX_WEIGHTS)
    ]


def language_and_links_stage(current: Tuning, _score: Score) -> list[Tuning]:
    """Weight of unspaced-script bigrams, of the ones no memory holds, and link following."""
    return [current] + [
        dataclasses.replace(current, gram_weight=g, unseen_gram_share=u)
        for g, u in product(GRAM_WEIGHTS, UNSEEN_GRAM_SHARES)
    ]


def cutoff_stage(current: Tuning, _score: Score) -> list[Tuning]:
    return [current] + [
        dataclasses.replace(current, absolute_floor=a, relative_floor=r, standout=z)
        for a, r, z in product(ABSOLUTE_FLOORS, RELATIVE_FLOORS, STANDOUTS)
    ]


def describe(t: Tuning) -> str:
    return (
        f"fields={t.field_weights} concept={t.concept_weight} abs={t.absolute_floor} "
        f"rel={t.relative_floor} standout={t.standout} gram={t.gram_weight} "
        f"unseen_gram={t.unseen_gram_share} prefix={t.prefix_weight} "
        f"groups={len(GROUP_LABELS) if t.lexicon is None else len(t.lexicon)}"
    )
