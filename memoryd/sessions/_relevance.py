"""Lexical relevance between a task and session entries: tokens, stems, IDF weights.

Words, stems and stopwords are the local ranker's, so a brief and ``select`` read text alike;
identifiers count whole and in parts, and words that frame a task ("resume") are dropped.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping

from memoryd._unicode_words import fold
from memoryd._unicode_words import words as unicode_words
from memoryd.select import _text
from memoryd.select._text import split_words, stem

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*[A-Za-z0-9]|[A-Za-z0-9]")
_WORD_OR_OTHER = re.compile(rf"({_WORD.pattern})|([^\x00-\x7f]+)")

_TASK_WORDS = """
    across already always among another anyway around build building built changes clean
    cleaning continue continued decide decided don enough finish finished happen happens isn
    latest least less many may needed needs never often perhaps pick rather really resume
    resumed setup since sometimes soon start started stuff though thus whatever whether within
    without yesterday
"""
STOPWORDS = _text.STOPWORDS | _text.WEAK | frozenset(_TASK_WORDS.split())

PREFIX = 6
"""Letters two long terms must share at the start to match (as the selector's prefix match)."""


def tokens(text: str) -> list[str]:
    """Content stems of ``text``: whole identifiers and their parts, stopwords removed; other
    scripts folded, their words (or CJK and Thai bigrams) counted as words."""
    found: list[str] = []
    # A duration in shorthand ("24h", "30 min") with its unit spelled out, since a task's
    # number rarely matches but its unit does.
    text = _DURATION.sub(lambda m: f"{m.group(1)} {_UNIT_WORDS[m.group(2)]}", text)
    if not text.isascii():
        for m in _WORD_OR_OTHER.finditer(fold(text, lower=False)):
            if m.group(1) is not None:
                found += _word_tokens(m.group(1))
            else:
                found += unicode_words(m.group(2))
        return found
    for raw in _WORD.findall(text):
        found += _word_tokens(raw)
    return found


_DURATION = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s?(h|hrs?|mins?)\b")
_UNIT_WORDS = {"h": "hours", "hr": "hours", "hrs": "hours", "min": "minutes", "mins": "minutes"}


def _word_tokens(raw: str) -> list[str]:
    """The stems an ASCII identifier or word stands for (none for a stopword)."""
    found: list[str] = []
    parts = split_words(raw)
    # A hyphenated word ("full-year") is just its parts, so it is not counted twice.
    identifier = len(parts) > 1 and (raw.strip("-").count("-") < len(parts) - 1)
    for word in [raw.lower(), *parts] if identifier else parts:
        if len(word) < 2 or word in STOPWORDS:
            continue
        found.append(stem(word))
    return found


def idf_table(documents: Iterable[set[str]]) -> tuple[dict[str, float], int]:
    """Document frequencies turned into IDF weights; also returns the document count."""
    docs = list(documents)
    counts = Counter(term for doc in docs for term in doc)
    return {term: _idf(len(docs), df) for term, df in counts.items()}, len(docs)


def _idf(size: int, df: int) -> float:
    return math.log((size + 1) / (df + 0.5))


def weight(term: str, idf: Mapping[str, float], size: int) -> float:
    """IDF of ``term``; a term no document has gets the highest weight."""
    return idf.get(term, _idf(size, 0))


def coverage(query: set[str], doc: set[str], idf: Mapping[str, float], size: int) -> float:
    """IDF-weighted share of the query's terms that ``doc`` contains (0..1); a long term also
    matches one with the same first ``PREFIX`` letters ("persistence", "persisted")."""
    total = sum(weight(term, idf, size) for term in query)
    if total <= 0:
        return 0.0
    missing = [t for t in query - doc if len(t) >= PREFIX]
    starts = {t[:PREFIX] for t in doc if len(t) >= PREFIX} if missing else set()
    held = (query & doc).union(t for t in missing if t[:PREFIX] in starts)
    return sum(weight(term, idf, size) for term in held) / total


def near_pairs(query: list[str], doc: list[str], window: int = 3) -> int:
    """How many pairs of nearby query terms also occur near each other in ``doc``."""
    wanted = {(a, b) for i, a in enumerate(query) for b in query[i + 1 : i + window] if a != b}
    seen = {
        frozenset((a, b))
        for i, a in enumerate(doc)
        for b in doc[i + 1 : i + window]
        if a != b and a and b
    }
    return sum(frozenset(pair) in seen for pair in wanted)


def overlap(query: set[str], doc: set[str], idf: Mapping[str, float], size: int) -> float:
    """Summed IDF of shared terms: the evidence an entry gives about the query."""
    return sum(weight(term, idf, size) for term in query & doc)
