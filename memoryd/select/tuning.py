"""The local ranker's tunable choices, and the cut-off that turns scores into an answer.

Every number a person might be tempted to tune lives in :class:`Tuning`, so the
quality bench can fit them on some projects and score them on another
(leave-one-project-out) without touching the ranker's code. The shipped
:data:`DEFAULT` is what that procedure picks when fitted on every development
project (see docs/ranker.md); it was never chosen by looking at a held-out
project's score.

The cut-off answers "does anything here *clearly* help?". A fixed number cannot
answer that across folders: a folder whose memories all share the prompt's
vocabulary gives every memory a middling score. So a result has to clear three
bars: an absolute floor, a share of the best hit, and a margin over the
folder's own score distribution for this query (its mean plus ``standout``
standard deviations). Memories already surfaced in the session take part in the
comparison but are never returned, so when the best matches were already shown
the weaker ones are not offered in their place.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from memoryd.select._lexicon import EARNED

FIELDS = ("file", "name", "desc", "body")
CALIBRATION_MIN_SIZE = 30
"""A folder smaller than this is measured as if the missing memories scored zero.

With three memories one strong hit is only 1.4 standard deviations above the
mean, so a pure z-score bar would silence every small folder; padding to a
typical folder size (the same size the ranker's IDF assumes) keeps the bar about
*how unusual* a score is, not about how many memories there happen to be."""


@dataclass(frozen=True, slots=True)
class Tuning:
    """One setting of every tunable choice (hashable, so benches can cache by it)."""

    field_weights: tuple[float, float, float, float] = (1.5, 2.5, 2.0, 0.6)
    """BM25F weight of the filename, name, description and body."""
    concept_weight: float = 0.45
    """A match through a paraphrase group counts this much of a word match."""
    absolute_floor: float = 0.65
    """Minimum normalised score for anything to be returned."""
    relative_floor: float = 0.5
    """Results must score at least this fraction of the best hit."""
    standout: float = 0.0
    """Standard deviations above the folder's mean score a result must reach."""
    gram_weight: float = 1.0
    """Weight of a character bigram of Chinese, Japanese, Korean or Thai text against a word's."""
    unseen_gram_share: float = 0.3
    """How much of a query bigram that no memory holds counts in the score's yardstick.

    Such a bigram is most often the seam between two words ("局之" in
    "布局之后"), not a word the folder lacks; counting it in full would hold
    every unspaced-script prompt to a higher bar than an English one."""
    prefix_weight: float = 0.0
    """A query word also matches the folder's words that share its first ``PREFIX`` letters
    ("concurrency" and "concurrent", "configuración" and "config") at this weight (0: off)."""
    lexicon: frozenset[str] | None = None
    """Paraphrase groups in use, by label (None: every group in ``_lexicon``)."""

    @property
    def weights(self) -> dict[str, float]:
        return dict(zip(FIELDS, self.field_weights, strict=True))


DEFAULT = Tuning(
    concept_weight=0.6,
    absolute_floor=0.65,
    relative_floor=0.6,
    standout=2.5,
    gram_weight=0.5,
    unseen_gram_share=0.0,
    prefix_weight=0.3,
    lexicon=EARNED,
)
"""What the leave-one-project-out search picks when fitted on every development project."""


class _Linked(Protocol):
    @property
    def near_duplicates(self) -> list[tuple[str, str]]: ...


def one_per_lesson(scores: Mapping[str, float], relations: _Linked) -> list[float]:
    """The scores as a distribution in which near-duplicates count once (their best score).

    Twenty copies of one lesson are one thing the folder knows, not twenty: they
    must not raise the bar that each of them is measured against.
    """
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

    ``population`` is the score distribution the standout bar is measured on
    (default: ``scores`` themselves). Candidates in ``whole`` contain every
    content word of the prompt: they need not stand out, since a folder where
    many memories answer the whole prompt is a folder rich in answers, not a
    crowd of partial matches.
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
