"""The embedded ranker: field-weighted BM25 with paraphrase concepts and a strict cut-off.

It runs with no network and no model, so it is the default and the one CI
exercises. The contract it serves is "return only memories that clearly help,
or nothing", which shapes the design:

* BM25F (:mod:`memoryd.select.bm25`) over filename, name, description and
  body, because the header fields are written to say what a memory is for
  while bodies are long and noisy.
* Query words also match through general paraphrase groups (``_lexicon``), at
  a discount, since prompts seldom reuse the memory's wording.
* Scores are normalised by how much of the query's information the best
  possible match could explain, giving a number that means roughly the same
  thing across folders; the cut-off (:mod:`memoryd.select.tuning`) decides
  what is "clearly" relevant, so unrelated prompts get an empty answer.
* A memory that another candidate says it supersedes is dropped, and its
  replacement inherits its score; near-duplicates travel together.

Documents are analysed once (:mod:`memoryd.select.analysis`, when their folder
is loaded for memories that come from the index); here a query is analysed and
scored against those term statistics.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from memoryd._unicode_words import is_gram
from memoryd.select._lexicon import concepts_of
from memoryd.select._text import WEAK_TERMS, terms
from memoryd.select.analysis import DocTerms
from memoryd.select.bm25 import FIELD_B, Lengths, score
from memoryd.select.candidates import Candidate, analysis_of
from memoryd.select.relations import Relations, compute_relations
from memoryd.select.tuning import DEFAULT, Tuning, cut, one_per_lesson

WEAK_WEIGHT = 0.3
TYPE_PRIOR = {"user": 0.75, "feedback": 1.0, "project": 1.0, "reference": 1.0}

PREFIX = 6
"""Letters a query word and a folder word must share at the start to match by prefix."""


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
        for concept in concepts_of(w):
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
        """Per query token, how much it adds to each candidate's normalised score.

        Summing a candidate's values gives :meth:`scores`; the split lets the cut-off see
        *which* parts of the query a memory answers.
        """
        qw = query_weights(query, self.tuning)
        if not qw or not candidates:
            return {c.filename: {} for c in candidates}
        docs = [analysis_of(c) for c in candidates]
        if self.tuning.prefix_weight > 0:
            vocabulary = self._vocabulary(docs)
            qw, expanded = _with_prefixes(
                qw, self.tuning, lambda p: terms_with_prefix(vocabulary, p)
            )
        else:
            expanded = set()
        hits = {t: _doc_hits(t, docs) for t in qw}
        totals = [sum(d.lengths[f] for d in docs) for f in range(len(FIELD_B))]

        def length_of(index: int) -> Sequence[int]:
            return docs[index].lengths

        def prior(index: int) -> float:
            return TYPE_PRIOR.get(candidates[index].type or "", 0.9)

        parts = score(
            qw,
            hits,
            Lengths(len(candidates), totals, length_of),
            prior,
            self.tuning,
            expanded=expanded,
        )
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

    def rank(
        self,
        query: str,
        candidates: Sequence[Candidate],
        limit: int = 5,
        relations: Relations | None = None,
        *,
        shown: Collection[str] = (),
        below: list[Scored] | None = None,
    ) -> list[Scored]:
        """The up-to-``limit`` candidates that clearly help with ``query``: see :meth:`ranked`."""
        return self.ranked(query, candidates, limit, relations, shown=shown, below=below)[0]

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
        best before the cut-off (what a judge reads). ``relations``: the directory's links
        (:func:`~memoryd.select.relations.compute_relations`), else worked out now.
        A superseded memory is neither; its replacement, when a candidate, inherits its
        relevance. Those ``shown`` (surfaced) set the bar but are neither, nor are their
        near-duplicates returned. ``below`` gets the up-to-``limit`` best memories the query
        reached that were not returned (below the cut), from the same scores."""
        if limit <= 0 or not candidates:
            return [], []
        answer, scores, short = self._cut(
            query,
            candidates,
            limit,
            relations=relations,
            shown=shown,
            shortlist=shortlist,
        )
        if below is not None:
            out = {s.filename for s in answer} | set(shown)
            rest = heapq.nlargest(limit, ((v, fn) for fn, v in scores.items() if fn not in out))
            below.extend(Scored(fn, round(v, 6)) for v, fn in rest if v > 0)
        return answer, short

    def _cut(
        self,
        query: str,
        candidates: Sequence[Candidate],
        limit: int,
        *,
        relations: Relations | None,
        shown: Collection[str],
        shortlist: int,
    ) -> tuple[list[Scored], dict[str, float], list[Scored]]:
        """:meth:`ranked`'s answer and shortlist, with the scores of all the query reached."""
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
        if max(scores.values(), default=0.0) < self.tuning.absolute_floor:
            return [], scores, short  # most prompts: nothing to calibrate
        qw = query_weights(query, self.tuning)  # cheap: one short text
        words = {t for t in qw if t[0] != "~" and t not in WEAK_TERMS}
        whole = {fn for fn in scores if words and words <= parts[fn].keys()}
        if relations.near_duplicates:  # twins count once, zeros included
            population = one_per_lesson({fn: scores.get(fn, 0.0) for fn in parts}, relations)
        else:
            population = [*scores.values(), *[0.0] * (len(parts) - len(scores))]
        chosen = cut(scores, shown, self.tuning, population, whole)
        if not chosen:
            return [], scores, short
        for a, b in relations.near_duplicates:
            for have, twin in ((a, b), (b, a)):
                if have in chosen and twin not in chosen and twin in parts and twin not in shown:
                    chosen.append(twin)
                    scores.setdefault(twin, 0.0)
        chosen.sort(key=lambda fn: (-scores[fn], fn))
        return [Scored(fn, round(scores[fn], 6)) for fn in chosen[:limit]], scores, short


def _with_prefixes(
    qw: dict[str, float], tuning: Tuning, starting_with: Callable[[str], list[str]]
) -> tuple[dict[str, float], set[str]]:
    """``qw`` plus, for each long query word, the folder's words sharing its first letters.

    They weigh ``prefix_weight`` of the word and stay out of the score's yardstick
    (like paraphrase concepts, they widen what matches, not what is asked).
    """
    if tuning.prefix_weight <= 0:
        return qw, set()
    extra: dict[str, float] = {}
    for t, w in qw.items():
        if len(t) < PREFIX or t[0] == "~" or is_gram(t):
            continue
        for other in starting_with(t[:PREFIX]):
            if other not in qw:
                extra[other] = max(extra.get(other, 0.0), w * tuning.prefix_weight)
    return ({**qw, **extra}, set(extra)) if extra else (qw, set())


def terms_with_prefix(vocabulary: Sequence[str], prefix: str) -> list[str]:
    """Members of the sorted ``vocabulary`` that begin with ``prefix``."""
    out = []
    for i in range(bisect_left(vocabulary, prefix), len(vocabulary)):
        if not vocabulary[i].startswith(prefix):
            break
        out.append(vocabulary[i])
    return out


def _doc_hits(term: str, docs: Sequence[DocTerms]) -> list[tuple[int, Sequence[int]]]:
    out: list[tuple[int, Sequence[int]]] = []
    for index, doc in enumerate(docs):
        counts = [field_counts.get(term, 0) for field_counts in doc.fields]
        if any(counts):
            out.append((index, counts))
    return out
