"""A folder's inverted index, built from stored term statistics (never from text).

The query path walks only the posting lists of its own terms, so ranking a
folder costs what the query touches, not what the folder holds. A list is a
run of ``position, count per field...`` (positions ascending) in the narrowest
unsigned type that holds the folder's numbers (2 bytes almost always). All of a
folder's runs sit in one ``bytes`` blob, found through a sorted list of its
(interned) terms and their offsets, and field lengths in one flat array: a
few Python objects per folder rather than several per term and per memory,
so the cache of many folders stays small.
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from typing import Literal

from memoryd.select.analysis import FIELDS, DocTerms

_NF = len(FIELDS)
_STRIDE = 1 + _NF


class Postings:
    """Term -> the memories (by position in the folder's manifest) that contain it."""

    __slots__ = (
        "_lengths",
        "_offsets",
        "_runs",
        "_terms",
        "_totals",
        "positions",
        "weight",
    )
    _runs: memoryview
    _terms: list[str]
    _offsets: array[int]
    _lengths: memoryview
    _totals: list[int]
    weight: int

    def __init__(self, docs: Sequence[tuple[str, DocTerms]]) -> None:
        """``docs`` are ``(filename, analysis)`` of each memory in manifest order.

        They are walked twice: once to size each term's list, once to write the
        entries straight into a buffer of the final size, so the lists are never
        held twice or as one growing array per term (which took about twice
        their final size and left the heap fragmented).
        """
        self.positions: dict[str, int] = {}
        lengths = array("I")
        counts: dict[str, int] = {}
        widest = 0
        for position, (filename, doc) in enumerate(docs):
            self.positions[filename] = position
            lengths.extend(doc.lengths)
            widest = max(widest, position, *(max(c.values(), default=0) for c in doc.fields))
            for term in set().union(*doc.fields):
                n = counts.get(term)
                if n is None:  # one string per term shared by every folder's lists
                    counts[sys.intern(term)] = 1
                else:
                    counts[term] = n + 1
        typecode: Literal["H", "I"] = "I" if widest > 0xFFFF else "H"
        terms = sorted(counts)
        offsets, end = array("I", [0]), 0
        for term in terms:
            end += _STRIDE * counts[term]
            offsets.append(end)
        del counts
        packed = memoryview(bytearray(end * array(typecode).itemsize)).cast(typecode)
        index = {term: i for i, term in enumerate(terms)}
        _fill(docs, index, array("I", offsets[:-1]), packed)
        self._terms = terms
        self._runs = packed
        self._offsets = offsets
        self._lengths = memoryview(lengths.tobytes()).cast("I")
        self._totals = [sum(lengths[f::_NF]) for f in range(_NF)]
        self.weight = 600 + 16 * len(self._terms) + self._runs.nbytes + self._lengths.nbytes
        """Rough bytes held, for caches sized by memory."""

    def __len__(self) -> int:
        """How many memories the lists cover."""
        return len(self._lengths) // _NF

    def lengths(self, position: int) -> Sequence[int]:
        """Length in words of each field of the memory at ``position``."""
        return self._lengths[position * _NF : position * _NF + _NF]

    def totals(self, positions: Sequence[int]) -> list[int]:
        """Per field, the summed lengths of the memories at ``positions`` (each once)."""
        if len(positions) * 2 < len(self):
            picked = positions
            sign = 1
        else:  # most of the folder: the folder's totals less the few left out
            picked = sorted(set(range(len(self))).difference(positions))
            sign = -1
        out = list(self._totals) if sign < 0 else [0] * _NF
        for p in picked:
            for f in range(_NF):
                out[f] += sign * self._lengths[p * _NF + f]
        return out

    def run(self, term: str) -> Sequence[int]:
        """``position, count per field...`` of each memory holding ``term``, positions ascending."""
        i = bisect_left(self._terms, term)
        if i == len(self._terms) or self._terms[i] != term:
            return ()
        return self._runs[self._offsets[i] : self._offsets[i + 1]]

    def starting_with(self, prefix: str) -> list[str]:
        """The folder's terms that begin with ``prefix`` (its own spelling included)."""
        return terms_with_prefix(self._terms, prefix)

    def hits(self, term: str, wanted: dict[int, int]) -> list[tuple[int, Sequence[int]]]:
        """``(wanted[position], per-field counts)`` for each wanted position holding ``term``."""
        run = self.run(term)
        out: list[tuple[int, Sequence[int]]] = []
        for start in range(0, len(run), _STRIDE):
            found = wanted.get(run[start])
            if found is not None:
                out.append((found, run[start + 1 : start + _STRIDE]))
        return out


def terms_with_prefix(vocabulary: Sequence[str], prefix: str) -> list[str]:
    """Members of the sorted ``vocabulary`` that begin with ``prefix``."""
    out = []
    for i in range(bisect_left(vocabulary, prefix), len(vocabulary)):
        if not vocabulary[i].startswith(prefix):
            break
        out.append(vocabulary[i])
    return out


def _fill(
    docs: Iterable[tuple[str, DocTerms]],
    index: dict[str, int],
    cursor: array[int],
    packed: memoryview,
) -> None:
    """Write each memory's ``position, counts...`` at its terms' cursors (zeros are in place)."""
    for position, (_, doc) in enumerate(docs):
        slots: dict[int, int] = {}
        for f, field_counts in enumerate(doc.fields, start=1):
            for term, n in field_counts.items():
                i = index[term]
                at = slots.get(i)
                if at is None:
                    at = slots[i] = cursor[i]
                    cursor[i] = at + _STRIDE
                    packed[at] = position
                packed[at + f] = n
