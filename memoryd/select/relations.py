"""A folder's links that change what is worth returning: supersession (the old memory is never
returned) and near-duplicates (one lesson recorded twice: its copies travel together).
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from itertools import chain, combinations

from memoryd.select.analysis import DESC, NAME
from memoryd.select.candidates import Candidate, analysis_of
from memoryd.select.supersession import superseded_by

__all__ = ["Relations", "compute_relations", "header_of", "superseded_by", "twins_of"]

NEAR_DUPLICATE_MIN_SIMILARITY = 0.36  # cosine of header terms at which two memories are one
# Common terms: held by more than 1/_COMMON_SHARE of a type's memories (and _COMMON_MIN).
_COMMON_SHARE = 8
_COMMON_MIN = 4


def header_of(c: Candidate) -> Mapping[str, int]:
    """Counts of ``c``'s name, description and hook terms and concepts."""
    doc = analysis_of(c, body=False)
    counts = dict(doc.fields[NAME])
    for t, n in doc.fields[DESC].items():
        counts[t] = counts.get(t, 0) + n
    return counts


def _weighted(v: Mapping[str, int], idf: dict[str, float]) -> tuple[dict[str, float], float]:
    """IDF-weighted vector and its length."""
    w = {t: n * idf[t] for t, n in v.items()}
    return w, math.sqrt(sum([x * x for x in w.values()]))


def _cosine(a: tuple[dict[str, float], float], b: tuple[dict[str, float], float]) -> float:
    (wa, na), (wb, nb) = a, b
    if not na or not nb:
        return 0.0
    small, big = (wa, wb) if len(wa) <= len(wb) else (wb, wa)
    return sum([x * big[t] for t, x in small.items() if t in big]) / (na * nb)


def _pairs_to_compare(
    weighted: Sequence[tuple[dict[str, float], float]], members: Sequence[int]
) -> set[tuple[int, int]]:
    """Pairs of ``members`` (ascending) that may reach :data:`NEAR_DUPLICATE_MIN_SIMILARITY`:
    those sharing an uncommon term, and those whose common terms' bound reaches it."""
    held: dict[str, list[int]] = {}
    for i in members:
        for t in weighted[i][0]:
            held.setdefault(t, []).append(i)
    common_at = max(_COMMON_MIN, len(members) // _COMMON_SHARE)
    common = {t for t, holders in held.items() if len(holders) > common_at}
    pairs: set[tuple[int, int]] = set()
    for t, holders in held.items():
        if t not in common:
            pairs.update(combinations(holders, 2))
    share: dict[int, float] = {}
    for i in members:
        w, norm = weighted[i]
        if norm:
            share[i] = math.sqrt(sum(x * x for t, x in w.items() if t in common)) / norm
    # A little slack: the bound must not lose a pair to rounding.
    floor = NEAR_DUPLICATE_MIN_SIMILARITY - 1e-9
    heavy = [i for i in members if share.get(i, 0.0) >= floor]
    pairs.update((i, j) for i, j in combinations(heavy, 2) if share[i] * share[j] >= floor)
    return pairs


def twins_of(
    candidates: Sequence[Candidate], stale: dict[str, str | None]
) -> list[tuple[str, str]]:
    """Pairs of same-type ``candidates`` whose headers say nearly the same thing, in their
    order, except where one supersedes the other."""
    vectors = [header_of(c) for c in candidates]
    n = len(candidates)
    df = Counter(chain.from_iterable(vectors))
    idf = {t: math.log(1.0 + n / d) for t, d in df.items()}
    weighted = [_weighted(v, idf) for v in vectors]
    by_type: dict[str, list[int]] = {}
    for i, c in enumerate(candidates):
        if c.type is not None and c.type != "user":
            by_type.setdefault(c.type, []).append(i)
    found: list[tuple[int, int]] = []
    for members in by_type.values():
        for i, j in _pairs_to_compare(weighted, members):
            a, b = candidates[i].filename, candidates[j].filename
            if stale.get(a) == b or stale.get(b) == a:
                continue
            if _cosine(weighted[i], weighted[j]) >= NEAR_DUPLICATE_MIN_SIMILARITY:
                found.append((i, j))
    return [(candidates[i].filename, candidates[j].filename) for i, j in sorted(found)]


class Relations:
    """Supersession and near-duplicate links of one folder; near-duplicates may be given as a
    function, called when they are first asked for."""

    __slots__ = ("_find", "_lock", "_near", "superseded")

    def __init__(
        self,
        superseded: dict[str, str | None] | None = None,
        near_duplicates: list[tuple[str, str]] | Callable[[], list[tuple[str, str]]] | None = None,
    ) -> None:
        # Superseded filename -> the memory that took its place (None when it names none).
        self.superseded: dict[str, str | None] = superseded if superseded is not None else {}
        self._near = None if callable(near_duplicates) else near_duplicates or []
        self._find = near_duplicates if callable(near_duplicates) else list
        self._lock = threading.Lock()

    @property
    def near_duplicates(self) -> list[tuple[str, str]]:
        """Pairs of filenames that record the same lesson."""
        with self._lock:
            if self._near is None:  # then the finder goes, and what it reads from
                self._near, self._find = self._find(), list
            return self._near


def compute_relations(candidates: Sequence[Candidate]) -> Relations:
    """All supersession and near-duplicate links among ``candidates``."""
    stale = superseded_by(candidates)
    return Relations(stale, twins_of(candidates, stale))
