"""What the local ranker knows about one memory, worked out once when it is indexed.

Tokenizing, stemming and paraphrase expansion of a memory's filename, title,
description and body is the expensive half of ranking. It depends only on the
memory's text, so the writer does it when it stores the row (in the same
transaction) and the query path reads the result instead of re-deriving it.

:func:`analyse` is the one place that defines that analysis; the query-time
scoring in :mod:`memoryd.select.local` consumes its output. Stored results are
stamped with :data:`ANALYSIS_VERSION`, a digest of the tokenizer and lexicon
sources, so a memoryd whose analysis changed recomputes them from the stored
text at start-up instead of trusting stale counts.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

from memoryd.select import _lexicon, _text
from memoryd.select._lexicon import CONCEPTS
from memoryd.select._text import STOPWORDS, split_words, stem

FIELDS = ("file", "name", "desc", "body")
"""The fields of a memory, in the order of every per-field tuple below."""

TYPE_PREFIXES = ("user", "feedback", "project", "reference")
"""Filename prefixes that name the memory's type rather than its subject."""


def _sources_digest() -> str:
    digest = hashlib.sha256()
    for module_file in (_text.__file__, _lexicon.__file__, __file__):
        digest.update(Path(module_file).read_bytes())
    return digest.hexdigest()[:16]


ANALYSIS_VERSION = _sources_digest()
"""Changes whenever the tokenizer, the lexicon or this module change."""


_STEMS: dict[str, str] = {}
"""Raw word -> its term ("" for a stopword): one dict lookup per word instead of
a stopword test and a memoized call. Cleared when it grows past ``_STEMS_LIMIT``."""
_STEMS_LIMIT = 200_000


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
        return 64 + sum(100 * len(counts) for counts in self.fields)


def filename_text(filename: str) -> str:
    """The words of a filename, without ``.md`` and the type prefix."""
    stem = filename.removesuffix(".md")
    head, _, rest = stem.partition("_")
    return rest if head in TYPE_PREFIXES and rest else stem


def _field_terms(text: str) -> tuple[Counter[str], int]:
    """Term counts (each concept counted once per occurrence of its words) and length.

    The terms are those of :func:`memoryd.select._text.terms`, which queries use.
    """
    if not text:  # an empty body: nothing to split or count
        return Counter(), 0
    words = split_words(text)
    known = _STEMS
    for w in set(words).difference(known):
        known[w] = "" if w in STOPWORDS else stem(w)
    counts: Counter[str] = Counter([known[w] for w in words])
    length = len(words) - counts.pop("", 0)
    for term in sorted(counts.keys() & CONCEPTS.keys()):  # sorted: same JSON in every process
        n = counts[term]
        for concept in CONCEPTS[term]:
            counts[concept] += n
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
        fields=[dict(counts) for counts, _ in analysed],
        lengths=[length for _, length in analysed],
    )


def encode(doc: DocTerms) -> str:
    """Compact JSON for the ``files.terms_json`` column."""
    return json.dumps([doc.lengths, *doc.fields], separators=(",", ":"), ensure_ascii=False)


def decode(text: str) -> DocTerms | None:
    """Inverse of :func:`encode`; None for anything :func:`encode` cannot have written.

    A damaged value must not break ``select`` for its folder: the caller then
    analyses the row's text instead.
    """
    try:
        lengths, *fields = json.loads(text)
    except (ValueError, TypeError):
        return None
    if (
        len(fields) != len(FIELDS)
        or not isinstance(lengths, list)
        or len(lengths) != len(FIELDS)
        or not _counts(lengths)
        or not all(isinstance(f, dict) and _counts(f.values()) for f in fields)
    ):
        return None
    return DocTerms(fields=fields, lengths=lengths)


def _counts(values: Iterable[Any]) -> bool:
    """All non-negative ints (checked with C-level builtins: this runs per candidate)."""
    found = list(values)
    return set(map(type, found)) <= {int} and min(found, default=0) >= 0


def stored_terms(filename: str, name: str | None, description: str | None, body: str) -> str:
    """What the writer stores for a memory row."""
    return encode(analyse(filename, name, description, body))
