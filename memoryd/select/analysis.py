"""What the local ranker knows about one memory: its per-field term counts (:func:`analyse`)."""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import repeat
from pathlib import PurePath

from memoryd import _unicode_words
from memoryd.select._lexicon import CONCEPTS
from memoryd.select._text import _WORD, STOPWORDS, split_words, stem

FIELDS = ("file", "name", "desc", "body")  # the order of every per-field tuple
TYPE_PREFIXES = ("user", "feedback", "project", "reference")  # filename prefixes naming a type

_STEMS: dict[str, str] = {}  # raw word -> its term ("" for a stopword), cleared past the limit
_STEMS_LIMIT = 200_000
_UNKNOWN = "\0"  # a word not met yet (no word holds a NUL)


@dataclass(frozen=True, slots=True)
class DocTerms:
    """Per field (``FIELDS`` order), term and concept (``~label``) counts and length in words."""

    fields: list[dict[str, int]]
    lengths: list[int]

    @property
    def weight(self) -> int:
        """Rough bytes this record holds in memory, for caches sized by memory."""
        return 400 + sum(30 * len(counts) for counts in self.fields)


def filename_text(filename: str) -> str:
    """The words of a filename, without ``.md`` and the type prefix."""
    stem = filename.removesuffix(".md")
    head, _, rest = stem.partition("_")
    return rest if head in TYPE_PREFIXES and rest else stem


_LOWER = b"abcdefghijklmnopqrstuvwxyz0123456789"
_UPPER = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ"
# Translation tables: the camelCase test's classes ("aA" is a boundary), and word bytes kept.
_CASES = bytes(ord("a") if c in _LOWER else ord("A") if c in _UPPER else 32 for c in range(256))
_WORD_BYTES = bytes(c if c in _LOWER or c == ord("'") else ord(" ") for c in range(256))
_CONCEPT_TERMS = frozenset(CONCEPTS)


def _words(text: str) -> list[str]:
    """:func:`~memoryd.select._text.split_words` of ``text``, without regexes when it reads
    as ASCII with no camelCase boundary."""
    if not text.isascii():
        plain = _unicode_words.ascii_equivalent(text)
        if plain is None:
            return split_words(text)
        text = plain
    if b"aA" in text.encode().translate(_CASES):
        return split_words(text)
    words = text.lower().encode().translate(_WORD_BYTES).decode().split()
    if "'" not in text:
        return words
    return [w for token in words for w in (_WORD.findall(token) if "'" in token else (token,))]


# The C loop behind ``Counter.update``, on a plain dict.
_count_into: Callable[[dict[str, int], Iterable[str]], None] = collections._count_elements  # type: ignore[attr-defined]  # not in typeshed


def _field_terms(text: str) -> tuple[dict[str, int], int]:
    """Counts of :func:`~memoryd.select._text.terms` (then concepts, once per occurrence of
    their words), and the length in words."""
    if not text:
        return {}, 0
    words = _words(text)
    known = _STEMS
    counts: dict[str, int] = {}
    _count_into(counts, map(known.get, words, repeat(_UNKNOWN)))
    if _UNKNOWN in counts:  # words not met before: stem them, then count again
        for w in set(words).difference(known):
            known[w] = "" if w in STOPWORDS else stem(w)
        counts = {}
        _count_into(counts, map(known.__getitem__, words))
    length = len(words) - counts.pop("", 0)
    if hits := _CONCEPT_TERMS.intersection(counts):
        get = counts.get
        for term in sorted(hits):
            n = counts[term]
            for concept in CONCEPTS[term]:
                counts[concept] = get(concept, 0) + n
    if len(known) > _STEMS_LIMIT:
        known.clear()
    return counts, length


def analyse(filename: str, name: str | None, description: str | None, body: str) -> DocTerms:
    """The ranker's view of one memory; missing headers read as the rankers see them."""
    texts = (
        filename_text(filename),
        name or PurePath(filename).stem,
        description or "",
        body,
    )
    analysed = [_field_terms(t) for t in texts]
    return DocTerms(
        fields=[counts for counts, _ in analysed],
        lengths=[length for _, length in analysed],
    )


NAME, DESC = FIELDS.index("name"), FIELDS.index("desc")


def with_hook(doc: DocTerms, hook: str) -> DocTerms:
    """``doc`` with the terms of its ``MEMORY.md`` line that name and description lack, as
    more description."""
    if not hook:
        return doc
    extra, _ = _field_terms(hook)
    name, desc = doc.fields[NAME], doc.fields[DESC]
    new = {t: n for t, n in extra.items() if t not in desc and t not in name}
    if not new:
        return doc
    fields = list(doc.fields)
    fields[DESC] = {**desc, **new}
    lengths = list(doc.lengths)
    lengths[DESC] += sum(n for t, n in new.items() if t[0] != "~")
    return DocTerms(fields=fields, lengths=lengths)
