"""A folder's inverted index, built from stored term statistics (never from text).

The query path walks only the posting lists of its own terms, so ranking a
folder costs what the query touches, not what the folder holds. A list is a
run of ``position, count per field...`` (positions ascending) in the narrowest
unsigned type that holds the folder's numbers (2 bytes almost always). All of a
folder's runs sit in one ``bytes`` blob, found through a sorted list of its
(interned) terms and their offsets, and field lengths in one flat array: a
few Python objects per folder rather than several per term and per memory,
so the cache of many folders stays small. Ranking a handful of candidates
against a long list (a large folder's) looks each one up by bisection over
the run's positions instead of walking the whole run.
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
_BISECT_RATIO = 8
"""Look candidates up by bisection when a list is this many times longer than they are."""


class Postings:
    """Term -> the memories (by position in the folder's manifest) that contain it."""

    __slots__ = ("_lengths", "_offsets", "_runs", "_terms", "_totals", "positions", "weight")

    def __init__(self, docs: Iterable[tuple[str, DocTerms]]) -> None:
        """``(filename, analysis)`` of each memory in manifest order, read once (a caller
        may decode them as they come)."""
        self.positions: dict[str, int] = {}
        lengths = array("I")
        # Runs grow as 2-byte arrays (4-byte once a number outgrows them), not lists
        # of ints: building a 10k-file folder's lists would otherwise take several
        # times the memory they end up in.
        runs: dict[str, array[int]] = {}
        wide = False
        for position, (filename, doc) in enumerate(docs):
            self.positions[filename] = position
            lengths.extend(doc.lengths)
            merged: dict[str, list[int]] = {}
            for f, field_counts in enumerate(doc.fields):
                for term, n in field_counts.items():
                    counts = merged.get(term)
                    if counts is None:
                        counts = merged[term] = [position] + [0] * _NF
                    counts[1 + f] = n
            for term, entry in merged.items():
                run = runs.get(term)
                if run is None:
                    run = runs[sys.intern(term)] = array("I" if wide else "H")
                had = len(run)
                try:
                    run.extend(entry)
                except OverflowError:  # a count or position past 65,535
                    wide = True
                    run = runs[term] = array("I", run[:had])
                    run.extend(entry)
        typecode: Literal["H", "I"] = "I" if wide else "H"
        self._terms = sorted(runs)
        # One buffer of the final size, filled as the runs are let go: never two
        # copies of the lists at once.
        size = sum(len(run) for run in runs.values())
        packed = memoryview(bytearray(size * array(typecode).itemsize)).cast(typecode)
        offsets, end = array("I", [0]), 0
        for term in self._terms:
            run = runs.pop(term)
            packed[end : end + len(run)] = run if run.typecode == typecode else array(typecode, run)
            end += len(run)
            offsets.append(end)
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
