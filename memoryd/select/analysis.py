"""What the local ranker knows about one memory: its per-field term counts.

:func:`analyse` is the one definition of that analysis; it depends only on the
memory's text, so it is worked out once per version of the memory.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import repeat
from pathlib import PurePath

from memoryd import _unicode_words
from memoryd.select._lexicon import CONCEPTS
from memoryd.select._text import _WORD, STOPWORDS, split_words, stem

FIELDS = ("file", "name", "desc", "body")
"""The fields of a memory, in the order of every per-field tuple below."""

TYPE_PREFIXES = ("user", "feedback", "project", "reference")
"""Filename prefixes that name the memory's type rather than its subject."""


_STEMS: dict[str, str] = {}
"""Raw word -> its term ("" for a stopword): one dict lookup per word instead of
a stopword test and a memoized call. Cleared when it grows past ``_STEMS_LIMIT``."""
_STEMS_LIMIT = 200_000
_UNKNOWN = "\0"
"""What the stem lookup gives for a word not met yet (no word holds a NUL)."""


@dataclass(frozen=True, slots=True)
class DocTerms:
    """Per field (``FIELDS`` order), term counts and length in words.

    Concept tokens (``~label``) count once per occurrence of any word of their group.
    """

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


def _table(keep: bytes, upper: bytes = b"") -> bytes:
    """A ``bytes.translate`` table: ``keep`` bytes map to "a", ``upper`` to "A", others to " "."""
    return bytes(
        ord("a") if c in keep else ord("A") if c in upper else ord(" ") for c in range(256)
    )


_LOWER = b"abcdefghijklmnopqrstuvwxyz0123456789"
_CASES = _table(_LOWER, b"ABCDEFGHIJKLMNOPQRSTUVWXYZ")
"""Classes for the camelCase test: a lowercase letter or digit followed by an uppercase one."""
_WORD_BYTES = bytes(c if c in _LOWER or c == ord("'") else ord(" ") for c in range(256))
"""Keeps word characters and apostrophes, turns everything else into a space."""


_CONCEPT_TERMS = frozenset(CONCEPTS)
"""Terms that belong to a paraphrase group (a set: intersecting it walks only the field's terms)."""


def _words(text: str) -> list[str]:
    """:func:`memoryd.select._text.split_words` of ``text``, without regexes when it is ASCII
    (or reads as ASCII) with no camelCase boundary: the runs of ``[a-z0-9']`` of the lowered
    text, a token holding an apostrophe going through the tokenizer's own regex."""
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


_count_into: Callable[[dict[str, int], Iterable[str]], None] = collections._count_elements  # type: ignore[attr-defined]  # not in typeshed
"""The C loop behind ``Counter.update`` (in CPython since 3.2), called on a plain
dict: a ``Counter`` per field would add Python-level set-up (``__init__``,
``update``, an ABC check) on top of the counting itself."""


def _field_terms(text: str) -> tuple[dict[str, int], int]:
    """Term counts (each concept counted once per occurrence of its words) and length.

    The terms are those of :func:`memoryd.select._text.terms`, which queries use,
    in order of first occurrence, then concepts in the order of their sorted
    trigger terms (the stored bytes are the same in every process).
    """
    if not text:  # an empty body: nothing to split or count
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
    """``doc`` with the folder index's line for the memory read as more description.

    Only the line's terms that the name and description lack are added (a
    hook that repeats the description adds nothing), so a second wording
    widens what the memory matches without doubling what it already says.
    """
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
