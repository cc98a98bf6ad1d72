"""Relations between memories that change what is worth returning.

*Supersession* (worked out in :mod:`memoryd.select.supersession`): when a
decision changes, the new memory says it replaces the old one, or the old one
gets a "superseded by" banner. Returning the old one would mislead the agent,
so the ranker drops it and lets its successor inherit its relevance.

*Near-duplicates*: the same lesson is often recorded twice, months apart, with
different wording. Each copy adds a detail, so when one is returned its twin
comes along.

Both are decided from text alone, so they work on any folder.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from itertools import chain, combinations

from memoryd.select._lexicon import concepts_of
from memoryd.select._text import terms
from memoryd.select.analysis import FIELDS
from memoryd.select.candidates import Candidate
from memoryd.select.supersession import superseded_by

__all__ = [
    "Header",
    "Relations",
    "compute_relations",
    "header_of",
    "header_vector",
    "superseded_by",
]

NAME, DESC = FIELDS.index("name"), FIELDS.index("desc")
NEAR_DUPLICATE_MIN_SIMILARITY = 0.36
"""Cosine similarity of header terms above which two same-type memories are one lesson."""
_COMMON_SHARE = 8
_COMMON_MIN = 4
"""Header terms held by more than 1/``_COMMON_SHARE`` of a type's memories (and more than
``_COMMON_MIN``) are common: they pair memories only when they could make them twins."""


def header_of(c: Candidate) -> Mapping[str, int]:
    """Counts of ``c``'s header terms and concept tokens (name, then description): from its
    analysis when it carries one, else worked out from its text."""
    if c.terms is not None:
        return header_vector(c.terms.fields[NAME], c.terms.fields[DESC])
    counts: Counter[str] = Counter()
    for w in terms(f"{c.name} {c.description}"):
        counts[w] += 1
        for concept in concepts_of(w):
            counts[concept] += 1
    return counts


def header_vector(name: Mapping[str, int], description: Mapping[str, int]) -> dict[str, int]:
    """The header vector of a memory from its analysis's name and description counts."""
    counts = dict(name)
    for t, n in description.items():
        counts[t] = counts.get(t, 0) + n
    return counts


Header = tuple[str, str | None, Mapping[str, int], Mapping[str, int]]
"""A memory's filename, type, and its analysis's name and description term counts."""


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
    """Pairs of ``members`` (ascending) that may reach :data:`NEAR_DUPLICATE_MIN_SIMILARITY`.

    Comparing every pair costs what the folder's size squared does, though
    most pairs share nothing but a folder's common words. A pair that shares
    an uncommon term is compared. One that shares only common terms has, by
    Cauchy-Schwarz, a cosine of at most ``share[i] * share[j]``, where a
    member's share is the part of its vector's length its common terms make
    up; only such pairs whose bound reaches the threshold are compared too.
    No pair that could reach it is left out.
    """
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


def _near_duplicates(
    candidates: Sequence[Candidate], stale: dict[str, str | None]
) -> list[tuple[str, str]]:
    """Pairs of same-type candidates whose headers say nearly the same thing, except where
    one supersedes the other (the old one is stale, not a duplicate)."""
    return _near_duplicates_of([(c.filename, c.type, header_of(c)) for c in candidates], stale)


def _near_duplicates_of(
    memories: Sequence[tuple[str, str | None, Mapping[str, int]]], stale: dict[str, str | None]
) -> list[tuple[str, str]]:
    """Near-duplicate pairs among ``memories`` (filename, type, header vector), in their order."""
    vectors = [v for _, _, v in memories]
    n = len(memories)
    df = Counter(chain.from_iterable(vectors))
    idf = {t: math.log(1.0 + n / d) for t, d in df.items()}
    weighted = [_weighted(v, idf) for v in vectors]
    # Only same-type pairs can be twins: compare within each type, then restore
    # the candidates' pair order.
    by_type: dict[str, list[int]] = {}
    for i, (_, kind, _) in enumerate(memories):
        if kind is not None and kind != "user":
            by_type.setdefault(kind, []).append(i)
    found: list[tuple[int, int]] = []
    for members in by_type.values():
        for i, j in _pairs_to_compare(weighted, members):
            a, b = memories[i][0], memories[j][0]
            if stale.get(a) == b or stale.get(b) == a:
                continue
            if _cosine(weighted[i], weighted[j]) >= NEAR_DUPLICATE_MIN_SIMILARITY:
                found.append((i, j))
    return [(memories[i][0], memories[j][0]) for i, j in sorted(found)]


class Relations:
    """Supersession and near-duplicate links of one memory directory.

    They cost O(n²) to find and depend only on the directory's contents, so a caller
    computes them once per directory (from *all* its memories) with
    :func:`compute_relations` and passes them to every ranking of that directory.
    When ranking a slice of the directory, a superseded memory stays out even if its
    replacement is not in the slice, and a twin is only added if it is in the slice.

    Near-duplicates may be given as a function that finds them: they are then found
    when first asked for. A folder's first query often never asks (its best score is
    below the floor and nothing was shown), so its manifest does not pay for them.
    """

    __slots__ = ("_find", "_lock", "_near", "superseded")

    def __init__(
        self,
        superseded: dict[str, str | None] | None = None,
        near_duplicates: list[tuple[str, str]] | Callable[[], list[tuple[str, str]]] | None = None,
    ) -> None:
        self.superseded: dict[str, str | None] = superseded if superseded is not None else {}
        """Superseded filename -> the memory that took its place (None when it names none)."""
        self._near: list[tuple[str, str]] | None = None
        self._find: Callable[[], list[tuple[str, str]]] | None = None
        if callable(near_duplicates):
            self._find = near_duplicates
        else:
            self._near = near_duplicates or []
        self._lock = threading.Lock()

    @property
    def found_near_duplicates(self) -> list[tuple[str, str]] | None:
        """:attr:`near_duplicates` if they were found already, else None (nothing is found)."""
        return self._near

    @property
    def near_duplicates(self) -> list[tuple[str, str]]:
        """Pairs of filenames that record the same lesson."""
        if self._near is None:
            with self._lock:
                if self._near is None and self._find is not None:
                    # Then let the finder go, and what it reads from with it.
                    self._near, self._find = self._find(), None
        return self._near if self._near is not None else []

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Relations):
            return NotImplemented
        return (self.superseded, self.near_duplicates) == (
            other.superseded,
            other.near_duplicates,
        )

    __hash__ = None  # type: ignore[assignment]  # mutable contents, as the dataclass had

    @classmethod
    def of_folder(
        cls,
        headers: Sequence[Header],
        superseded: dict[str, str | None],
        twins: list[tuple[str, str]] | None = None,
    ) -> Relations:
        """:func:`compute_relations` of a folder's manifest, near-duplicates when first asked for.

        Its supersession links are the caller's (a manifest reuses what its
        unchanged memories said), and so are its near-duplicates when it knows
        them (``twins``: the folder's headers and supersession did not change).
        Otherwise they are found from ``headers`` (the same memories, in the
        same order, with the name and description counts of their analyses):
        only those are kept until then, not the candidates' bodies nor the
        rest of their analyses.
        """

        def find() -> list[tuple[str, str]]:
            return _near_duplicates_of(
                [(fn, kind, header_vector(n, d)) for fn, kind, n, d in headers], superseded
            )

        return cls(
            superseded=superseded,
            near_duplicates=twins if twins is not None else find,
        )

    def __repr__(self) -> str:
        return (
            f"Relations(superseded={self.superseded!r}, near_duplicates={self.near_duplicates!r})"
        )


def compute_relations(candidates: Sequence[Candidate]) -> Relations:
    """All supersession and near-duplicate links among ``candidates``."""
    stale = superseded_by(candidates)
    return Relations(
        superseded=stale,
        near_duplicates=_near_duplicates(candidates, stale),
    )
