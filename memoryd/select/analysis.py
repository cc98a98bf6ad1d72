"""What the local ranker knows about one memory, worked out once when it is indexed.

Tokenizing, stemming and paraphrase expansion of a memory's filename, title,
description and body is the expensive half of ranking. It depends only on the
memory's text, so the writer does it when it stores the row (in the same
transaction) and the query path reads the result instead of re-deriving it.

:func:`analyse` is the one place that defines that analysis; the query-time
scoring in :mod:`memoryd.select.local` consumes its output. Stored results are
stamped with :data:`ANALYSIS_VERSION`, a digest of the tokenizer and lexicon
sources, so a memoryd whose analysis changed recomputes them from the stored
text at start-up instead of trusting stale counts. The index is opened with
:data:`TERM_ANALYSIS` (storage sits below the ranker and is handed it).
"""

from __future__ import annotations

import collections
import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import chain, islice, repeat
from pathlib import Path, PurePath

from memoryd import _unicode_words
from memoryd.indexer.rows import TermAnalysis
from memoryd.select import _lexicon, _text
from memoryd.select._lexicon import CONCEPTS
from memoryd.select._text import _WORD, STOPWORDS, split_words, stem

FIELDS = ("file", "name", "desc", "body")
"""The fields of a memory, in the order of every per-field tuple below."""

TYPE_PREFIXES = ("user", "feedback", "project", "reference")
"""Filename prefixes that name the memory's type rather than its subject."""


def _sources_digest() -> str:
    digest = hashlib.sha256()
    for module_file in (_unicode_words.__file__, _text.__file__, _lexicon.__file__, __file__):
        digest.update(Path(module_file).read_bytes())
    return digest.hexdigest()[:16]


ANALYSIS_VERSION = _sources_digest()
"""Changes whenever the tokenizer, the lexicon or this module change."""


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
        return 64 + sum(100 * len(counts) for counts in self.fields)


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
    """:func:`memoryd.select._text.split_words` of ``text``, without regexes in the common case.

    The regex tokenizer costs about as much as the rest of the analysis put
    together. When ``text`` is ASCII and has no camelCase boundary, its words
    are the runs of ``[a-z0-9']`` of the lowered text, except that an
    apostrophe only joins a run to the letters after it: tokens holding one
    go through the tokenizer's own regex. Text whose only non-ASCII
    characters are separators (dashes, arrows, quote marks) is read as ASCII
    with those as spaces; other text (any script, folded, with bigrams for
    unspaced runs) always takes the tokenizer.
    """
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


_NO_COUNTS = b""


def encode(doc: DocTerms) -> bytes:
    """Packed bytes for the ``files.terms`` column: terms as text, counts as bytes.

    The layout is five lines (the four field lengths, then each field's terms
    separated by spaces, in the field's key order), a NUL, then the counts of
    every term in the same order: one byte each (marker ``b``) when all are
    below 256, else decimal text (marker ``t``). Terms never hold whitespace or
    a NUL (they are runs of ``[a-z0-9']`` or ``~`` + a lexicon label). Against
    compact JSON it is quicker to write and to read (once per memory each: at
    index time, and when a folder's manifest or a large folder's slice is
    read) and smaller.
    """
    values = list(chain.from_iterable(f.values() for f in doc.fields))
    if max(values, default=0) < 256:
        counts = b"b" + bytes(values)
    else:
        counts = b"t" + " ".join(map(str, values)).encode()
    lines = " ".join(map(str, doc.lengths)), *(" ".join(f) for f in doc.fields)
    return "\n".join(lines).encode() + b"\0" + counts


def decode(packed: object) -> DocTerms | None:
    """Inverse of :func:`encode`; None for anything :func:`encode` cannot have written.

    A damaged value (or one in an older format) must not break ``select`` for
    its folder: the caller then analyses the row's text instead.
    """
    if not isinstance(packed, bytes):
        return None
    head, _, counts = packed.partition(b"\0")
    lines = head.decode("utf-8", "replace").split("\n")
    marker, data = counts[:1], counts[1:]
    if len(lines) != len(FIELDS) + 1 or marker not in (b"b", b"t"):
        return None
    try:
        lengths = [int(n) for n in lines[0].split()]
        values: Sequence[int] = data if marker == b"b" else [int(n) for n in data.split()]
    except ValueError:
        return None
    keys = [line.split() for line in lines[1:]]
    if len(values) != sum(map(len, keys)) or len(lengths) != len(FIELDS):
        return None
    if min(lengths) < 0 or (marker == b"t" and min(values, default=0) < 0):
        return None  # bytes cannot hold a negative count; text can
    found = iter(values)
    # Not strict: the lengths were checked above, so each field takes exactly its own.
    fields = [dict(zip(k, islice(found, len(k)), strict=False)) for k in keys]
    if sum(map(len, fields)) != len(values):
        return None  # a term listed twice in one field
    return DocTerms(fields=fields, lengths=lengths)


def stored_terms(filename: str, name: str | None, description: str | None, body: str) -> bytes:
    """What the writer stores for a memory row."""
    return encode(analyse(filename, name, description, body))


TERM_ANALYSIS = TermAnalysis(version=ANALYSIS_VERSION, terms=stored_terms)
"""What every index store is opened with (the daemon, the CLI, tests and benches)."""
