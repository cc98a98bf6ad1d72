"""The local ranker: field-weighted BM25 (BM25F) with paraphrase concepts and a strict cut-off.

Scores are normalised by what a document matching every query word would score;
the cut-off (:mod:`.tuning`) keeps only what clearly helps. A superseded memory
is dropped and its successor inherits its score; near-duplicates travel together.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from memoryd._unicode_words import is_gram
from memoryd.select._lexicon import CONCEPTS
from memoryd.select._text import WEAK_TERMS, terms
from memoryd.select.analysis import DocTerms
from memoryd.select.candidates import Candidate, analysis_of
from memoryd.select.relations import Relations, compute_relations
from memoryd.select.tuning import DEFAULT, Tuning, cut, one_per_lesson

K1 = 1.2
FIELD_B = (0.3, 0.5, 0.6, 0.75)  # BM25 length normalisation per field (analysis.FIELDS)
NORM_POWER = 0.5  # scores are divided by the query's total IDF mass to this power
MIN_FOLDER_SIZE = 30

WEAK_WEIGHT = 0.3
TYPE_PRIOR = {"user": 0.75, "feedback": 1.0, "project": 1.0, "reference": 1.0}

PREFIX = 6  # letters a query word and a folder word share at the start to match by prefix


@dataclass(frozen=True, slots=True)
class Scored:
    """A ranked memory: higher ``score`` is better; all returned scores passed the cut-off."""

    filename: str
    score: float


def query_weights(query: str, tuning: Tuning) -> dict[str, float]:
    """Distinct query terms and concept tokens (of the groups in use) with their weights."""
    weights: dict[str, float] = {}
    for w in terms(query):
        base = WEAK_WEIGHT if w in WEAK_TERMS else tuning.gram_weight if is_gram(w) else 1.0
        weights[w] = max(weights.get(w, 0.0), base)
        for concept in CONCEPTS.get(w, ()):
            if tuning.lexicon is None or concept[1:] in tuning.lexicon:
                weights[concept] = max(weights.get(concept, 0.0), base * tuning.concept_weight)
    return weights


class LocalRanker:
    """Ranks candidates for a query; deterministic. ``tuning`` may be replaced between calls."""

    def __init__(self, tuning: Tuning = DEFAULT) -> None:
        self.tuning = tuning
        # The docs are kept with their ids, so no id in the key can be reused meanwhile.
        self._last_vocabulary: tuple[tuple[int, ...], list[str], list[DocTerms]] | None = None

    def contributions(
        self, query: str, candidates: Sequence[Candidate]
    ) -> dict[str, dict[str, float]]:
        """Per candidate, each query token's share of its normalised score."""
        qw = query_weights(query, self.tuning)
        if not qw or not candidates:
            return {c.filename: {} for c in candidates}
        docs = [analysis_of(c) for c in candidates]
        if self.tuning.prefix_weight > 0:
            vocabulary = self._vocabulary(docs)
            qw, expanded = _with_prefixes(qw, self.tuning, vocabulary)
        else:
            expanded = set()
        hits = {t: _doc_hits(t, docs) for t in qw}
        parts = _bm25f(qw, hits, docs, candidates, tuning=self.tuning, expanded=expanded)
        return dict(zip([c.filename for c in candidates], parts, strict=True))

    def _vocabulary(self, docs: Sequence[DocTerms]) -> list[str]:
        """Every term of ``docs``, sorted (for prefix matching), kept for the last set of docs."""
        key = tuple(map(id, docs))
        last = self._last_vocabulary  # one read: another thread may replace it
        if last is None or last[0] != key:
            last = (key, sorted(set().union(*(f.keys() for d in docs for f in d.fields))), [*docs])
            self._last_vocabulary = last
        return last[1]

    def scores(self, query: str, candidates: Sequence[Candidate]) -> dict[str, float]:
        """Normalised relevance of every candidate, before any cut-off (for tuning and tests)."""
        parts = self.contributions(query, candidates)
        return {fn: sum(p.values()) if p else 0 for fn, p in parts.items()}

    def ranked(
        self,
        query: str,
        candidates: Sequence[Candidate],
        limit: int = 5,
        relations: Relations | None = None,
        *,
        shown: Collection[str] = (),
        shortlist: int = 0,
        below: list[Scored] | None = None,
    ) -> tuple[list[Scored], list[Scored]]:
        """The up-to-``limit`` candidates that clearly help, best first, and the ``shortlist``
        best before the cut-off. ``relations`` default to those of ``candidates``; ``shown``
        ones set the bar but are never returned; ``below`` gets the up-to-``limit`` best
        the query reached that were not returned."""
        if limit <= 0 or not candidates:
            return [], []
        if relations is None:
            relations = compute_relations(candidates)
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
        # Only memories the query reaches have a score; the rest count as zeros.
        scores = {fn: sum(p.values()) for fn, p in parts.items() if p}
        best = heapq.nsmallest(
            shortlist,
            (fn for fn in parts if fn not in shown),
            key=lambda fn: (-scores.get(fn, 0), fn),
        )
        short = [Scored(fn, round(scores.get(fn, 0.0), 6)) for fn in best]
        chosen = self._chosen(query, parts, scores, relations=relations, shown=shown)
        answer = [Scored(fn, round(scores[fn], 6)) for fn in chosen[:limit]]
        if below is not None:
            out = {s.filename for s in answer} | set(shown)
            rest = heapq.nlargest(limit, ((v, fn) for fn, v in scores.items() if fn not in out))
            below.extend(Scored(fn, round(v, 6)) for v, fn in rest if v > 0)
        return answer, short

    def _chosen(
        self,
        query: str,
        parts: dict[str, dict[str, float]],
        scores: dict[str, float],
        *,
        relations: Relations,
        shown: Collection[str],
    ) -> list[str]:
        """The cut-off's picks, best first, with their near-duplicates (scored 0 if unscored)."""
        if max(scores.values(), default=0.0) < self.tuning.absolute_floor:
            return []  # most prompts: nothing to calibrate
        qw = query_weights(query, self.tuning)  # cheap: one short text
        words = {t for t in qw if t[0] != "~" and t not in WEAK_TERMS}
        whole = {fn for fn in scores if words and words <= parts[fn].keys()}
        if relations.near_duplicates:  # twins count once, zeros included
            population = one_per_lesson({fn: scores.get(fn, 0.0) for fn in parts}, relations)
        else:
            population = [*scores.values(), *[0.0] * (len(parts) - len(scores))]
        chosen = cut(scores, shown, self.tuning, population, whole)
        for a, b in relations.near_duplicates if chosen else ():
            for have, twin in ((a, b), (b, a)):
                if have in chosen and twin not in chosen and twin in parts and twin not in shown:
                    chosen.append(twin)
                    scores.setdefault(twin, 0.0)
        chosen.sort(key=lambda fn: (-scores[fn], fn))
        return chosen


def _bm25f(
    qw: dict[str, float],
    hits: dict[str, list[tuple[int, Sequence[int]]]],
    docs: Sequence[DocTerms],
    candidates: Sequence[Candidate],
    *,
    tuning: Tuning,
    expanded: Collection[str],
) -> list[dict[str, float]]:
    """Per candidate (index order), each query token's share of its normalised BM25F score,
    with statistics over the candidates themselves; ``expanded`` (prefix matches) stay out of
    the yardstick."""
    n = len(docs)
    totals = [sum(d.lengths[f] for d in docs) for f in range(len(FIELD_B))]
    field_weights = tuning.field_weights
    fields = range(len(field_weights))
    avg = [max(1.0, totals[f] / n) for f in fields]
    # A small list (a tiny folder, a big one's slice) is scored as a folder of typical size.
    n_idf = max(n, MIN_FOLDER_SIZE)
    idf = {t: math.log(1.0 + (n_idf - len(h) + 0.5) / (len(h) + 0.5)) for t, h in hits.items()}
    # The yardstick: what a document matching every word (and no concept) would score.
    ideal = sum(
        idf[t] * w * (tuning.unseen_gram_share if not hits[t] and is_gram(t) else 1.0)
        for t, w in qw.items()
        if not t.startswith("~") and t not in expanded
    )
    scale = (K1 + 1.0) * max(ideal, 1e-9) ** NORM_POWER
    out: list[dict[str, float]] = [{} for _ in range(n)]
    seen: dict[int, tuple[float, list[float]]] = {}
    for t, w in qw.items():
        for index, counts in hits[t]:
            known = seen.get(index)
            if known is None:
                known = seen[index] = (
                    TYPE_PRIOR.get(candidates[index].type or "", 0.9),
                    [
                        1.0 - b + b * d / a
                        for b, d, a in zip(FIELD_B, docs[index].lengths, avg, strict=True)
                    ],
                )
            prior, norms = known
            tf = 0.0
            for weight, c, norm in zip(field_weights, counts, norms, strict=True):
                if c:
                    tf += weight * c / norm
            if tf:
                out[index][t] = prior * w * idf[t] * tf * (K1 + 1.0) / (tf + K1) / scale
    return out


def _with_prefixes(
    qw: dict[str, float], tuning: Tuning, vocabulary: Sequence[str]
) -> tuple[dict[str, float], set[str]]:
    """``qw`` plus the words of the sorted ``vocabulary`` sharing a long query word's first
    ``PREFIX`` letters (at ``prefix_weight`` of it), and the set of those added."""
    extra: dict[str, float] = {}
    for t, w in qw.items():
        if len(t) < PREFIX or t[0] == "~" or is_gram(t):
            continue
        start = t[:PREFIX]
        i = bisect_left(vocabulary, start)
        while i < len(vocabulary) and vocabulary[i].startswith(start):
            if (other := vocabulary[i]) not in qw:
                extra[other] = max(extra.get(other, 0.0), w * tuning.prefix_weight)
            i += 1
    return ({**qw, **extra}, set(extra)) if extra else (qw, set())


def _doc_hits(term: str, docs: Sequence[DocTerms]) -> list[tuple[int, Sequence[int]]]:
    out: list[tuple[int, Sequence[int]]] = []
    for index, doc in enumerate(docs):
        counts = [field_counts.get(term, 0) for field_counts in doc.fields]
        if any(counts):
            out.append((index, counts))
    return out
