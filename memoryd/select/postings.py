"""A folder's inverted index, built from stored term statistics (never from text).

The query path walks only the posting lists of its own terms, so ranking a
folder costs what the query touches, not what the folder holds. Each list is
one immutable ``bytes`` run of ``position, count per field...`` (positions
ascending) in the narrowest unsigned type that holds the folder's numbers
(2 bytes almost always), and term strings are interned so folders share them:
a few hundred folders of memories stay within a few tens of MB. Ranking a
handful of candidates against a long list (a large folder's) looks each one up
by bisection over the run's positions instead of walking the whole run.
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from typing import Literal

from memoryd.select.analysis import FIELDS, DocTerms

_STRIDE = 1 + len(FIELDS)
_TERM_BYTES = 110
"""Per distinct term: the dict slot, the bytes object's header and a share of the string."""
_BISECT_RATIO = 8
"""Look candidates up by bisection when a list is this many times longer than they are."""


class Postings:
    """Term -> the memories (by position in the folder's manifest) that contain it."""

    __slots__ = ("_lists", "_typecode", "lengths", "positions", "weight")

    def __init__(self, filenames: Sequence[str], docs: Iterable[DocTerms]) -> None:
        """``docs`` in ``filenames`` order; read once, so a caller may decode them as they come."""
        self.positions = {fn: i for i, fn in enumerate(filenames)}
        self.lengths: list[Sequence[int]] = []
        runs: dict[str, list[int]] = {}
        for position, doc in enumerate(docs):
            self.lengths.append(doc.lengths)
            merged: dict[str, list[int]] = {}
            for f, field_counts in enumerate(doc.fields):
                for term, n in field_counts.items():
                    counts = merged.get(term)
                    if counts is None:
                        counts = merged[term] = [position] + [0] * len(FIELDS)
                    counts[1 + f] = n
            for term, entry in merged.items():
                run = runs.get(term)
                if run is None:
                    runs[sys.intern(term)] = entry
                else:
                    run.extend(entry)
        widest = max((max(run) for run in runs.values()), default=0)
        self._typecode: Literal["H", "I"] = "H" if widest < 1 << 16 else "I"
        self._lists = {t: array(self._typecode, run).tobytes() for t, run in runs.items()}
        self.weight = sum(_TERM_BYTES + len(b) for b in self._lists.values()) + 120 * len(
            self.lengths
        )
        """Rough bytes held, for caches sized by memory."""

    def run(self, term: str) -> Sequence[int]:
        """``position, count per field...`` of each memory holding ``term``, positions ascending."""
        raw = self._lists.get(term)
        return memoryview(raw).cast(self._typecode) if raw is not None else ()

    def hits(self, term: str, wanted: dict[int, int]) -> list[tuple[int, Sequence[int]]]:
        """``(wanted[position], per-field counts)`` for each wanted position holding ``term``."""
        run = self.run(term)
        out: list[tuple[int, Sequence[int]]] = []
        if len(run) > _STRIDE * _BISECT_RATIO * len(wanted):
            at = run[::_STRIDE]
            for position, index in wanted.items():
                i = bisect_left(at, position)
                if i < len(at) and at[i] == position:
                    out.append((index, run[i * _STRIDE + 1 : (i + 1) * _STRIDE]))
            return out
        for start in range(0, len(run), _STRIDE):
            found = wanted.get(run[start])
            if found is not None:
                out.append((found, run[start + 1 : start + _STRIDE]))
        return out
