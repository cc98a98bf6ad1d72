"""Tokenizing and stemming shared by the local ranker and the ``context`` brief: words split
on punctuation, underscores and camelCase, and a light suffix stripper."""

from __future__ import annotations

import functools
import re

from memoryd._unicode_words import ascii_equivalent
from memoryd._unicode_words import words as _unicode_words

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_VOWEL = re.compile(r"[aeiouy]")
_SHORT_CVC = re.compile(r"[^aeiou][aeiou][^aeiouwxy]\Z")  # the end of a short stem

_STOPWORDS_TEXT = """
a about above after again against all also am an and any are as at be because been before
being below between both but by can could d did do does doing done down during each else
ever every few for from further get gets getting got had has have having he her here hers
him his how i if in into is it its itself just let like ll m me might mine more most much
must my myself no nor not now of off on once one only or other our ours out over own please
re s same shall she should so some such t than that the their theirs them then there these
they this those through to too under until up us ve very was way we were what when where
which while who whom why will with would yet you your yours
"""
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())
"""Function words plus the filler that every prompt carries ("can you", "please")."""

_WEAK_TEXT = """
add added adding again anything change changed check come everything fix go going good help
keep know look looking make need new now ok okay put right run running see set show someone
something still sure take tell thing things today try trying use used using want way went
work working write wrote
"""
WEAK = frozenset(_WEAK_TEXT.split())
"""Task verbs that say little about *which* memory helps; they count, but only a little."""


_IRREGULAR = {"using": "use", "used": "use", "uses": "use", "data": "data", "was": "was"}


@functools.lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """Strip common English inflections; leaves short words and identifiers alone."""
    w = word
    if len(w) <= 3 or w.isdigit():
        return w
    if w in _IRREGULAR:
        return _IRREGULAR[w]
    if w.endswith("'s"):
        w = w[:-2]
    if w.endswith(("ies", "ied")) and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith(("sses", "xes", "ches", "shes")):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")) and len(w) > 3:
        w = w[:-1]
    for suffix in ("ingly", "edly", "ing", "ed"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            base = w[: -len(suffix)]
            if not _VOWEL.search(base):
                break
            if len(base) > 2 and base[-1] == base[-2] and base[-1] not in "lsz":
                base = base[:-1]
            elif base.endswith(("at", "bl", "iz", "iv", "ur", "ac", "ag", "dl", "ov")) or (
                3 <= len(base) <= 4 and _SHORT_CVC.search(base)
            ):
                base += "e"
            w = base
            break
    if w.endswith("e") and len(w) > 4:
        w = w[:-1]
    if w.endswith("ly") and len(w) > 5:
        w = w[:-2]
    return w


def split_words(text: str) -> list[str]:
    """Lower-cased word tokens, with identifiers broken at ``_``, ``-``, ``.`` and camelCase;
    other scripts folded, unspaced ones as bigrams (:mod:`memoryd._unicode_words`)."""
    if not text.isascii():
        plain = ascii_equivalent(text)
        if plain is None:
            return _unicode_words(text)
        text = plain
    text = _CAMEL.sub(" ", text).replace("_", " ")
    return _WORD.findall(text.lower())


def terms(text: str) -> list[str]:
    """Stemmed content terms of ``text`` (stopwords removed), in order, with repeats."""
    return [stem(w) for w in split_words(text) if w not in STOPWORDS]


WEAK_TERMS = frozenset(stem(w) for w in WEAK)
"""``WEAK`` as stemmed terms, the form :func:`terms` produces."""
