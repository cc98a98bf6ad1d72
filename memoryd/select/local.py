"""The embedded ranker: field-weighted BM25 with paraphrase concepts and a strict cut-off.

It runs with no network and no model, so it is the default and the one CI
exercises. The contract it serves is "return only memories that clearly help,
or nothing", which shapes the design:

* BM25F over filename, name, description and body, because the header fields
  are written to say what a memory is for while bodies are long and noisy.
* Query words also match through general paraphrase groups (``_lexicon``), at
  a discount, since prompts seldom reuse the memory's wording.
* Scores are normalised by how much of the query's information the best
  possible match could explain, giving a number that means roughly the same
  thing across folders; the cut-off (:mod:`memoryd.select.tuning`) decides
  what is "clearly" relevant, so unrelated prompts get an empty answer.
* A memory that another candidate says it supersedes is dropped, and its
  replacement inherits its score; near-duplicates travel together.
"""

from __future__ import annotations

import math
from collections import Counter, OrderedDict
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from memoryd.select._lexicon import concepts_of
from memoryd.select._text import WEAK_TERMS, terms
from memoryd.select.candidates import Candidate
from memoryd.select.relations import Relations, compute_relations
from memoryd.select.tuning import DEFAULT, FIELDS, Tuning, cut, one_per_lesson

K1 = 1.2
FIELD_B = {"file": 0.3, "name": 0.5, "desc": 0.6, "body": 0.75}
WEAK_WEIGHT = 0.3
TYPE_PRIOR = {"user": 0.75, "feedback": 1.0, "project": 1.0, "reference": 1.0}

NORM_POWER = 0.5
"""Scores are divided by the square root of the query's total IDF mass: long prompts
should not need proportionally more matches, but short ones should not pass on one word."""
MIN_FOLDER_SIZE = 30
_CACHE_LIMIT = 4096
_RELATIONS_CACHE_LIMIT = 64


@dataclass(frozen=True, slots=True)
class Scored:
    """A ranked memory: higher ``score`` is better; all returned scores passed the cut-off."""

    filename: str
    score: float


@dataclass(frozen=True, slots=True)
class _Doc:
    """Per-field term counts (words and concept tokens) and field lengths of one memory."""

    fields: dict[str, Counter[str]]
    lengths: dict[str, int]


def _field_terms(text: str) -> tuple[Counter[str], int]:
    """Term counts (each concept counted once per occurrence of its words) and length."""
    words = terms(text)
    counts: Counter[str] = Counter(words)
    for w, n in list(counts.items()):
        for concept in concepts_of(w):
            counts[concept] += n
    return counts, len(words)


def _filename_text(filename: str) -> str:
    stem = filename.removesuffix(".md")
    head, _, rest = stem.partition("_")
    return rest if head in TYPE_PRIOR and rest else stem


def _build_doc(c: Candidate) -> _Doc:
    texts = {
        "file": _filename_text(c.filename),
        "name": c.name,
        "desc": c.description,
        "body": c.body,
    }
    analysed = {f: _field_terms(t) for f, t in texts.items()}
    return _Doc(
        fields={f: counts for f, (counts, _) in analysed.items()},
        lengths={f: length for f, (_, length) in analysed.items()},
    )


def _query_weights(query: str, tuning: Tuning) -> dict[str, float]:
    """Distinct query terms and concept tokens (of the groups in use) with their weights."""
    weights: dict[str, float] = {}
    for w in terms(query):
        base = WEAK_WEIGHT if w in WEAK_TERMS else 1.0
        weights[w] = max(weights.get(w, 0.0), base)
        for concept in concepts_of(w):
            if tuning.lexicon is None or concept[1:] in tuning.lexicon:
                weights[concept] = max(weights.get(concept, 0.0), base * tuning.concept_weight)
    return weights


class LocalRanker:
    """Ranks candidates for a query; deterministic, and caches tokenized memories.

    ``tuning`` may be replaced between calls (the quality bench does, to reuse
    the document cache across a grid of settings).
    """

    def __init__(self, tuning: Tuning = DEFAULT) -> None:
        self.tuning = tuning
        self._cache: OrderedDict[tuple[str, str, str, str | None, str], _Doc] = OrderedDict()
        self._relations: dict[tuple[int, ...], Relations] = {}

    def _doc(self, c: Candidate) -> _Doc:
        key = (c.filename, c.name, c.description, c.type, c.body)
        doc = self._cache.get(key)
        if doc is None:
            doc = self._cache[key] = _build_doc(c)
            if len(self._cache) > _CACHE_LIMIT:
                self._cache.popitem(last=False)  # least recently used
        else:
            self._cache.move_to_end(key)
        return doc

    def _related(self, candidates: Sequence[Candidate]) -> Relations:
        """Supersession and near-duplicate links, cached per candidate set (they cost O(n²))."""
        key = tuple(hash((c.filename, c.name, c.description, c.type, c.body)) for c in candidates)
        rel = self._relations.get(key)
        if rel is None:
            if len(self._relations) >= _RELATIONS_CACHE_LIMIT:
                self._relations.clear()
            rel = self._relations[key] = compute_relations(candidates)
        return rel

    def contributions(
        self, query: str, candidates: Sequence[Candidate]
    ) -> dict[str, dict[str, float]]:
        """Per query token, how much it adds to each candidate's normalised score.

        Summing a candidate's values gives :meth:`scores`; the split lets the cut-off see
        *which* parts of the query a memory answers.
        """
        qw = _query_weights(query, self.tuning)
        weights = self.tuning.weights
        if not qw or not candidates:
            return {c.filename: {} for c in candidates}
        docs = [self._doc(c) for c in candidates]
        n = len(docs)
        avg = {f: max(1.0, sum(d.lengths[f] for d in docs) / n) for f in FIELDS}
        df: Counter[str] = Counter()
        for d in docs:
            present = set().union(*(d.fields[f].keys() for f in FIELDS))
            df.update(t for t in present if t in qw)
        # Small candidate lists (tiny folders, or a prefiltered slice of a big one)
        # would give every word a low IDF and silence everything; score them as
        # if they came from a folder of typical size.
        n_idf = max(n, MIN_FOLDER_SIZE)
        idf = {t: math.log(1.0 + (n_idf - df[t] + 0.5) / (df[t] + 0.5)) for t in qw}
        # What a document matching every word (and no concept) would score: the
        # yardstick that makes scores comparable across folders and queries.
        ideal = sum(idf[t] * w for t, w in qw.items() if not t.startswith("~"))
        scale = (K1 + 1.0) * max(ideal, 1e-9) ** NORM_POWER
        out: dict[str, dict[str, float]] = {}
        for c, d in zip(candidates, docs, strict=True):
            prior = TYPE_PRIOR.get(c.type or "", 0.9)
            parts: dict[str, float] = {}
            for t, w in qw.items():
                tf = 0.0
                for f, fw in weights.items():
                    raw = d.fields[f].get(t, 0)
                    if raw:
                        norm = 1.0 - FIELD_B[f] + FIELD_B[f] * d.lengths[f] / avg[f]
                        tf += fw * raw / norm
                if tf:
                    parts[t] = prior * w * idf[t] * tf * (K1 + 1.0) / (tf + K1) / scale
            out[c.filename] = parts
        return out

    def scores(self, query: str, candidates: Sequence[Candidate]) -> dict[str, float]:
        """Normalised relevance of every candidate, before any cut-off (for tuning and tests)."""
        return {
            fn: sum(parts.values()) for fn, parts in self.contributions(query, candidates).items()
        }

    def rank(
        self,
        query: str,
        candidates: Sequence[Candidate],
        limit: int = 5,
        relations: Relations | None = None,
        shown: Collection[str] = (),
    ) -> list[Scored]:
        """The up-to-``limit`` candidates that clearly help with ``query``, best first.

        ``relations`` are the directory's supersession and near-duplicate links
        (:func:`~memoryd.select.relations.compute_relations`); pass them when ranking
        many queries against one directory. Without them they are worked out (and
        cached) from ``candidates``. A superseded memory is never returned; its
        replacement, when it is a candidate, inherits its relevance. Candidates
        named in ``shown`` (already surfaced) set the bar but are never returned,
        nor are their near-duplicates.
        """
        if limit <= 0 or not candidates:
            return []
        if relations is None:
            relations = self._related(candidates)
        parts = self.contributions(query, candidates)
        for old, new in relations.superseded.items():
            stale = parts.pop(old, None)
            if (
                stale is not None
                and new is not None
                and new in parts
                and sum(stale.values()) > sum(parts[new].values())
            ):
                parts[new] = stale
        scores = {fn: sum(p.values()) for fn, p in parts.items()}
        if max(scores.values(), default=0.0) < self.tuning.absolute_floor:
            return []  # most prompts: nothing to calibrate
        words = {t for t, w in _query_weights(query, self.tuning).items() if w == 1.0}
        whole = {fn for fn, p in parts.items() if words and words <= p.keys()}
        chosen = cut(scores, shown, self.tuning, one_per_lesson(scores, relations), whole)
        if not chosen:
            return []
        for a, b in relations.near_duplicates:
            for have, twin in ((a, b), (b, a)):
                if have in chosen and twin not in chosen and twin in scores and twin not in shown:
                    chosen.append(twin)
        chosen.sort(key=lambda fn: (-scores[fn], fn))
        return [Scored(fn, round(scores[fn], 6)) for fn in chosen[:limit]]
