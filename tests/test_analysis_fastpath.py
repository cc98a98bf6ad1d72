"""A memory's analysis gives exactly what the query-side tokenizer and stemmer give.

:mod:`memoryd.select.analysis` splits words without regexes when it can and
expands concepts through a set intersection; queries still go through
:func:`memoryd.select._text.terms`. A document term the query side would spell
differently would silently never match, so the fast path is checked against a
plain re-statement of the analysis built from the query-side functions.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.indexer.parse import parse_bytes
from memoryd.indexer.records import KIND_MEMORY
from memoryd.select._lexicon import CONCEPTS
from memoryd.select._text import STOPWORDS, split_words, stem
from memoryd.select.analysis import DocTerms, _words, analyse, filename_text

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "memory"

TRICKY = [
    "",
    "plain words only",
    "Sentence Case, with CAPS and camelCaseWords and HTTPServer9Go",
    "snake_case_name and kebab-case-name and dotted.module.path",
    "don't it's rock'n'roll ''quoted'' it's9 a'b'c x' 'y '9 9'a",
    "Don'T CAN'T o'Neil",
    "\u212a Kelvin: aK\u212a and \u0130stanbul and STRASSE stra\u00dfe",
    "caf\u00e9 na\u00efve \u2014 em dash \u2192 arrow \U0001f600 emoji",
    "tabs\tand\x1cfile\x1dseparators\x1e\x1fhere\nnewline\r\nreturn",
    "flaky intermittent tests fail randomly; the deploy rollback failed",
    "retrying retried retries payments charged declined",
]

_ALPHABET = st.sampled_from(
    [*"aAzZ09_-'.' \t\n", "Kk", "\u212a", "\u0130", "\u00df", "\u00e9", "\u2019", "\x1c", "\u00a0"]
)
TEXT = st.lists(st.one_of(_ALPHABET, st.sampled_from(sorted(CONCEPTS))), max_size=40).map("".join)


def _reference(text: str) -> tuple[dict[str, int], int]:
    """The analysis of one field, written out with the query-side functions."""
    terms = [stem(w) for w in split_words(text) if w not in STOPWORDS]
    counts = Counter(terms)
    for term in sorted(set(counts) & set(CONCEPTS)):
        for concept in CONCEPTS[term]:
            counts[concept] += counts[term]
    return dict(counts), len(terms)


def _reference_doc(filename: str, name: str | None, description: str | None, body: str) -> DocTerms:
    texts = (filename_text(filename), name or Path(filename).stem, description or "", body)
    fields = [_reference(t) for t in texts]
    return DocTerms([f for f, _ in fields], [n for _, n in fields])


def test_tricky_texts_split_like_the_query_tokenizer() -> None:
    for text in TRICKY:
        assert _words(text) == split_words(text), text


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_generated_texts_split_like_the_query_tokenizer(text: str) -> None:
    assert _words(text) == split_words(text)


@settings(max_examples=150, deadline=None)
@given(TEXT, TEXT, TEXT)
def test_generated_fields_get_the_reference_analysis(name: str, desc: str, body: str) -> None:
    assert analyse("feedback_x.md", name, desc, body) == _reference_doc(
        "feedback_x.md", name, desc, body
    )


def test_example_memories_get_the_reference_analysis() -> None:
    checked = 0
    for path in sorted(EXAMPLES.glob("*.md")):
        parsed = parse_bytes(path.read_bytes(), KIND_MEMORY)
        if parsed.error is not None:
            continue
        got = analyse(path.name, parsed.name, parsed.description, parsed.body)
        assert got == _reference_doc(path.name, parsed.name, parsed.description, parsed.body)
        checked += 1
    assert checked >= 5
