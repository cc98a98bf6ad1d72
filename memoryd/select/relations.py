"""Relations between memories that change what is worth returning.

*Supersession*: when a decision changes, the new memory usually says so in its
own words ("Supersedes "Celery broker is Redis"", "replaces the nom parser
memory") while the old one is left untouched. Returning the old one would
mislead the agent, so the ranker drops it and lets the new one inherit its
relevance.

*Near-duplicates*: the same lesson is often recorded twice, months apart, with
different wording. Each copy adds a detail, so when one is returned its twin
comes along.

Both are decided from text alone, so they work on any folder.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import combinations

from memoryd.select._lexicon import concepts_of
from memoryd.select._text import terms
from memoryd.select.candidates import Candidate

_SUPERSEDES = re.compile(
    r"\b(?:supersedes|supersedes the|replaces|replaces the|obsoletes)\b\s*(?:the\s+)?"
    r"(?:\d{4}\s+)?(?P<quoted>[\"“][^\"”\n]{3,120}[\"”])?(?P<rest>[^.;\n]{0,80})",
    re.IGNORECASE,
)
_QUOTE_CHARS = '"“”'

SUPERSEDE_MIN_OVERLAP = 0.5
"""Share of the referenced title's terms that a candidate's name must contain."""
NEAR_DUPLICATE_MIN_SIMILARITY = 0.36
"""Cosine similarity of header terms above which two same-type memories are one lesson."""


@lru_cache(maxsize=4096)
def _term_set(text: str) -> frozenset[str]:
    return frozenset(terms(text))


def superseded_by(candidates: Sequence[Candidate]) -> dict[str, str]:
    """Map each superseded candidate's filename to the candidate that supersedes it.

    A memory is superseded when another candidate's description or body says it
    supersedes/replaces something whose title matches the memory's name (or,
    failing a quoted title, whose wording overlaps its name and filename).
    """
    return superseded_among(candidates, candidates)


def superseded_among(
    referencing: Sequence[Candidate],
    everyone: Sequence[Candidate],
    *,
    quoted_only: bool = False,
) -> dict[str, str]:
    """:func:`superseded_by` where only ``referencing`` need bodies.

    ``everyone`` may be headers only (empty bodies): a large directory passes
    all its headers plus the files whose text mentions superseding, and sets
    ``quoted_only`` so only explicit ``Supersedes "Title"`` references count
    (in a big folder "replaces" is also an ordinary word). Title words go into
    an inverted index, so a reference is scored by counting the words it shares
    with each title instead of comparing it with every memory; ties go to the
    earlier candidate.
    """
    titles = [_title_terms(c) for c in everyone]
    by_term: dict[str, list[int]] = {}
    for i, words in enumerate(titles):
        for t in words:
            by_term.setdefault(t, []).append(i)
    out: dict[str, str] = {}
    for new in referencing:
        best_score: dict[int, float] = {}
        for ref in _references(new, quoted_only):
            ref_terms = _term_set(ref)
            if not ref_terms:
                continue
            shared: Counter[int] = Counter()
            for t in ref_terms:
                shared.update(by_term.get(t, ()))
            for i, n in shared.items():
                best_score[i] = max(best_score.get(i, 0.0), n / len(ref_terms))
        best: tuple[float, str] | None = None
        for i in sorted(best_score):
            old, score = everyone[i], best_score[i]
            if old.filename == new.filename or old.type != new.type:
                continue
            if score >= SUPERSEDE_MIN_OVERLAP and (best is None or score > best[0]):
                best = (score, old.filename)
        if best is not None:
            out.setdefault(best[1], new.filename)
    return out


def _references(c: Candidate, quoted_only: bool) -> list[str]:
    """What ``c`` says it supersedes: quoted titles, else the words that follow."""
    found = []
    for m in _SUPERSEDES.finditer(f"{c.description}\n{c.body}"):
        if m.group("quoted"):
            found.append(m.group("quoted").strip(_QUOTE_CHARS + " "))
        elif not quoted_only and m.group("rest"):
            found.append(m.group("rest").strip(_QUOTE_CHARS + " "))
    return found


def _title_terms(c: Candidate) -> frozenset[str]:
    return _term_set(f"{c.name} {c.filename.removesuffix('.md').replace('_', ' ')}")


@lru_cache(maxsize=4096)
def _vector(c: Candidate) -> Counter[str]:
    counts: Counter[str] = Counter()
    for w in terms(f"{c.name} {c.description}"):
        counts[w] += 1
        for concept in concepts_of(w):
            counts[concept] += 1
    return counts


def _weighted(v: Counter[str], idf: dict[str, float]) -> tuple[dict[str, float], float]:
    """IDF-weighted vector and its length."""
    w = {t: n * idf[t] for t, n in v.items()}
    return w, math.sqrt(sum(x * x for x in w.values()))


def _cosine(a: tuple[dict[str, float], float], b: tuple[dict[str, float], float]) -> float:
    (wa, na), (wb, nb) = a, b
    if not na or not nb:
        return 0.0
    small, big = (wa, wb) if len(wa) <= len(wb) else (wb, wa)
    return sum(x * big[t] for t, x in small.items() if t in big) / (na * nb)


def near_duplicate_pairs(candidates: Sequence[Candidate]) -> list[tuple[str, str]]:
    """Pairs of same-type candidates whose headers say nearly the same thing.

    Pairs where one supersedes the other are not duplicates: the old one is stale.
    """
    return _near_duplicates(candidates, superseded_by(candidates))


def _near_duplicates(
    candidates: Sequence[Candidate], stale: dict[str, str]
) -> list[tuple[str, str]]:
    vectors = [_vector(c) for c in candidates]
    n = len(candidates)
    df: Counter[str] = Counter()
    for v in vectors:
        df.update(v.keys())
    idf = {t: math.log(1.0 + n / d) for t, d in df.items()}
    weighted = [_weighted(v, idf) for v in vectors]
    pairs: list[tuple[str, str]] = []
    for i, j in combinations(range(n), 2):
        a, b = candidates[i], candidates[j]
        if a.type != b.type or a.type in (None, "user"):
            continue
        if stale.get(a.filename) == b.filename or stale.get(b.filename) == a.filename:
            continue
        if _cosine(weighted[i], weighted[j]) >= NEAR_DUPLICATE_MIN_SIMILARITY:
            pairs.append((a.filename, b.filename))
    return pairs


@dataclass(frozen=True, slots=True)
class Relations:
    """Supersession and near-duplicate links of one memory directory.

    They cost O(n²) to find and depend only on the directory's contents, so a caller
    computes them once per directory (from *all* its memories) with
    :func:`compute_relations` and passes them to every ranking of that directory.
    When ranking a slice of the directory, a superseded memory stays out even if its
    replacement is not in the slice, and a twin is only added if it is in the slice.
    """

    superseded: dict[str, str] = field(default_factory=dict)
    """Superseded filename -> filename of the memory that supersedes it."""
    near_duplicates: list[tuple[str, str]] = field(default_factory=list)
    """Pairs of filenames that record the same lesson."""


def compute_relations(candidates: Sequence[Candidate]) -> Relations:
    """All supersession and near-duplicate links among ``candidates``."""
    stale = superseded_by(candidates)
    return Relations(superseded=stale, near_duplicates=_near_duplicates(candidates, stale))
