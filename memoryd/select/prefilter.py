"""Which memories of a large folder a query is ranked over, from its posting lists.

Ranking every memory of a folder of thousands costs more than a query may
spend, so a large folder offers the ranker only the ``PREFILTER_LIMIT``
memories that score best under a folder-wide version of the ranker's own
BM25F: each query term (concepts included) weighs by its IDF over the whole
folder and each memory by its field-weighted, length-normalised count,
with the ranker's constants. Nothing here touches SQLite or re-reads text.

Per term, the memories it scores highest in are worked out once per folder
version (the first query that uses the term pays for walking its list) and
only the best ``IMPACTS_PER_TERM`` are kept, so a query costs at most that
many additions per term however common its words are. A memory that is below
that mark for every one of its terms can be missed: with a list long enough
to be cut, each of its members adds little.
"""

from __future__ import annotations

import heapq
import math
import threading
from array import array
from collections.abc import Callable
from typing import Any

from memoryd.select.analysis import FIELDS
from memoryd.select.local import FIELD_B, K1
from memoryd.select.postings import Postings
from memoryd.select.tuning import DEFAULT

PREFILTER_LIMIT = 100
"""Candidates a large folder's query is ranked over."""
IMPACTS_PER_TERM = 300
"""Best memories kept per term (positions and scores), computed on first use."""
TERMS_KEPT = 2048
"""Terms whose best memories are kept per folder version before the table starts over."""

_NF = len(FIELDS)
_STRIDE = 1 + _NF
Impacts = tuple[float, "array[int]", "array[float]"]
"""A term's folder-wide IDF, and its best memories (positions) with their term scores."""


class Prefilter:
    """A large folder's top-N candidate picker over its :class:`Postings`."""

    __slots__ = ("_impacts", "_in_order", "_lock", "_order", "_postings", "_scale", "weight")

    def __init__(self, postings: Postings) -> None:
        self._postings = postings
        live = postings.positions
        n = len(postings)
        weights = DEFAULT.field_weights
        avg = [max(1.0, t / max(1, len(live))) for t in postings.totals(sorted(live.values()))]
        # Per memory and field: the field weight over BM25's length normalisation.
        self._scale = array("f")
        for p in range(n):
            length = postings.lengths(p)
            self._scale.extend(
                weights[f] / (1.0 - FIELD_B[f] + FIELD_B[f] * length[f] / avg[f])
                for f in range(_NF)
            )
        # Ties go to the earlier filename, whatever order the positions were given in
        # (patched lists append changed memories at the end).
        self._order = array("I", [0]) * n
        for rank, filename in enumerate(sorted(live)):
            self._order[live[filename]] = rank
        self._in_order = not postings.dead and all(r == p for p, r in enumerate(self._order))
        """Positions follow filename order (lists built, not patched): ties need no lookup."""
        self._impacts: dict[str, Impacts] = {}
        self._lock = threading.Lock()
        self.weight = 4 * len(self._scale) + TERMS_KEPT * IMPACTS_PER_TERM * 8
        """Bytes it may hold once its term table is full, for caches sized by memory."""

    def _term(self, term: str) -> Impacts:
        with self._lock:
            known = self._impacts.get(term)
        if known is not None:
            return known
        run = self._postings.run(term)
        dead, order, scale = self._postings.dead, self._order, self._scale
        at: list[int] = []
        scores: list[float] = []
        for i in range(0, len(run), _STRIDE):  # position, then the four analysis.FIELDS
            position = run[i]
            if dead and position in dead:
                continue
            s = position * _NF
            tf = (
                run[i + 1] * scale[s]
                + run[i + 2] * scale[s + 1]
                + run[i + 3] * scale[s + 2]
                + run[i + 4] * scale[s + 3]
            )
            at.append(position)
            scores.append(tf / (tf + K1))
        # nlargest keeps the input order among equal keys: ascending positions.
        by: Callable[[int], Any] = scores.__getitem__
        if not self._in_order:
            by = lambda i: (scores[i], -order[at[i]])  # noqa: E731
        best = heapq.nlargest(IMPACTS_PER_TERM, range(len(scores)), key=by)
        n, df = len(self._postings.positions), len(at)
        idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        known = (idf, array("I", (at[i] for i in best)), array("f", (scores[i] for i in best)))
        with self._lock:
            if len(self._impacts) >= TERMS_KEPT:
                self._impacts.clear()
            self._impacts[term] = known
        return known

    def top(self, weights: dict[str, float], limit: int = PREFILTER_LIMIT) -> list[int]:
        """Positions of the ``limit`` best memories for query term ``weights``, best first."""
        total: dict[int, float] = {}
        for term, w in weights.items():
            if term.startswith("~"):
                continue
            idf, best, scores = self._term(term)
            k = w * idf
            for position, value in zip(best, scores, strict=True):
                total[position] = total.get(position, 0.0) + k * value
        order = self._order if not self._in_order else range(len(self._order))
        return heapq.nlargest(limit, total, key=lambda p: (total[p], -order[p]))
