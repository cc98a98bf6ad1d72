"""Field-weighted BM25 (BM25F) of candidates from their term statistics alone.

:func:`score` gives, per candidate, each query token's share of its normalised
score; :class:`~memoryd.select.local.LocalRanker` sums and cuts them. Scores are
divided by what a document matching every query word would score, so they mean
roughly the same across folders and queries.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from memoryd._unicode_words import is_gram
from memoryd.select.tuning import Tuning

K1 = 1.2
FIELD_B = (0.3, 0.5, 0.6, 0.75)
"""BM25 length normalisation per field, in ``analysis.FIELDS`` order."""
NORM_POWER = 0.5
"""Scores are divided by the square root of the query's total IDF mass: long prompts
should not need proportionally more matches, but short ones should not pass on one word."""
MIN_FOLDER_SIZE = 30

Hits = dict[str, list[tuple[int, Sequence[int]]]]
"""Per query token: ``(candidate index, per-field counts)`` of every candidate holding it."""


@dataclass(frozen=True, slots=True)
class Lengths:
    """Field lengths of the candidates: their count, per-field totals, and each one's."""

    n: int
    totals: Sequence[int]
    of: Callable[[int], Sequence[int]]


def score(
    qw: dict[str, float],
    hits: Hits,
    lengths: Lengths,
    prior: Callable[[int], float],
    tuning: Tuning,
    *,
    expanded: Collection[str] = (),
) -> list[dict[str, float]]:
    """Field-weighted BM25 of every candidate (index order) from term statistics alone.

    Statistics are over the candidates themselves: their count, their average
    field lengths and, per token, how many of them hold it (``len(hits[t])``).
    Work is per hit: a candidate no query token reaches costs nothing here.
    ``expanded`` are tokens added by prefix matching, which stay out of the yardstick.
    """
    n = lengths.n
    field_weights = tuning.field_weights
    fields = range(len(field_weights))
    avg = [max(1.0, lengths.totals[f] / n) for f in fields]
    # Small candidate lists (tiny folders, or a prefiltered slice of a big one)
    # would give every word a low IDF and silence everything; score them as
    # if they came from a folder of typical size.
    n_idf = max(n, MIN_FOLDER_SIZE)
    idf = {t: math.log(1.0 + (n_idf - len(h) + 0.5) / (len(h) + 0.5)) for t, h in hits.items()}
    # What a document matching every word (and no concept) would score: the
    # yardstick that makes scores comparable across folders and queries.
    ideal = sum(
        idf[t] * w * (tuning.unseen_gram_share if not hits[t] and is_gram(t) else 1.0)
        for t, w in qw.items()
        if not t.startswith("~") and t not in expanded
    )
    scale = (K1 + 1.0) * max(ideal, 1e-9) ** NORM_POWER
    out: list[dict[str, float]] = [{} for _ in range(n)]
    fw0, fw1, fw2, fw3 = field_weights  # analysis.FIELDS
    b0, b1, b2, b3 = FIELD_B
    a0, a1, a2, a3 = avg
    seen: dict[int, tuple[float, float, float, float, float]] = {}
    for t, w in qw.items():
        for index, (c0, c1, c2, c3) in hits[t]:
            known = seen.get(index)
            if known is None:
                d0, d1, d2, d3 = lengths.of(index)
                known = seen[index] = (
                    prior(index),
                    1.0 - b0 + b0 * d0 / a0,
                    1.0 - b1 + b1 * d1 / a1,
                    1.0 - b2 + b2 * d2 / a2,
                    1.0 - b3 + b3 * d3 / a3,
                )
            p, n0, n1, n2, n3 = known
            tf = 0.0
            if c0:
                tf += fw0 * c0 / n0
            if c1:
                tf += fw1 * c1 / n1
            if c2:
                tf += fw2 * c2 / n2
            if c3:
                tf += fw3 * c3 / n3
            if tf:
                out[index][t] = p * w * idf[t] * tf * (K1 + 1.0) / (tf + K1) / scale
    return out
