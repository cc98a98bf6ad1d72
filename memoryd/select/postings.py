"""A folder's inverted index, built from stored term statistics (never from text).

The query path walks only the posting lists of its own terms, so ranking a
folder costs what the query touches, not what the folder holds. Lists are
flat ``array('I')`` runs of ``position, count per field...`` to keep a few
hundred folders of memories within a few tens of MB.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

from memoryd.select.analysis import FIELDS, DocTerms

_STRIDE = 1 + len(FIELDS)


class Postings:
    """Term -> the memories (by position in the folder's manifest) that contain it."""

    __slots__ = ("_lists", "lengths", "positions", "weight")

    def __init__(self, filenames: Sequence[str], docs: Sequence[DocTerms]) -> None:
        self.positions = {fn: i for i, fn in enumerate(filenames)}
        self.lengths = [d.lengths for d in docs]
        lists: dict[str, array[int]] = {}
        for position, doc in enumerate(docs):
            merged: dict[str, list[int]] = {}
            for f, field_counts in enumerate(doc.fields):
                for term, n in field_counts.items():
                    counts = merged.get(term)
                    if counts is None:
                        counts = merged[term] = [0] * len(FIELDS)
                    counts[f] = n
            for term, counts in merged.items():
                run = lists.get(term)
                if run is None:
                    run = lists[term] = array("I")
                run.append(position)
                run.extend(counts)
        self._lists = lists
        self.weight = sum(96 + run.itemsize * len(run) for run in lists.values()) + 200 * len(docs)
        """Rough bytes held, for caches sized by memory."""

    def hits(self, term: str, wanted: dict[int, int]) -> list[tuple[int, Sequence[int]]]:
        """``(wanted[position], per-field counts)`` for each wanted position holding ``term``."""
        run = self._lists.get(term)
        if run is None:
            return []
        out: list[tuple[int, Sequence[int]]] = []
        for start in range(0, len(run), _STRIDE):
            index = wanted.get(run[start])
            if index is not None:
                out.append((index, run[start + 1 : start + _STRIDE]))
        return out
