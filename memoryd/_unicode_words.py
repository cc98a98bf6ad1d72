"""Words of any script: accent folding, and character bigrams for scripts written unspaced.

Folding is NFKC, then diacritics off Latin, Greek and Cyrillic letters (as SQLite's
unicode61 folds them). Unspaced runs (CJK, Thai, Lao, Khmer, Myanmar, Korean) are read as
overlapping character pairs; a one-character run stays whole.
"""

from __future__ import annotations

import functools
import re
import unicodedata

UNSPACED = (
    "\u0e00-\u0eff"  # Thai, Lao
    "\u1000-\u109f"  # Myanmar
    "\u1100-\u11ff"  # Hangul Jamo
    "\u1780-\u17ff"  # Khmer
    "\u3005-\u3007"  # CJK iteration and ideographic marks
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3100-\u312f"  # Bopomofo
    "\u3130-\u318f"  # Hangul compatibility Jamo
    "\u31f0-\u31ff"  # Katakana extensions
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\U00020000-\U0003134f"  # CJK extensions B-G
)
"""Character ranges of scripts written without spaces between words (a regex class body)."""

_TOKEN = re.compile(rf"([{UNSPACED}]+)|([^\W_{UNSPACED}]+(?:'[^\W\d_{UNSPACED}]+)?)")
_UNSPACED_CHAR = re.compile(rf"[{UNSPACED}]")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_FOLDED_BLOCKS = ((0x00C0, 0x052F), (0x1E00, 0x1FFF))
"""Latin-1 Supplement to Cyrillic Supplement, Latin Extended Additional, Greek Extended."""
_LIGATURES = {"ß": "ss", "æ": "ae", "œ": "oe", "ø": "o", "đ": "d", "ł": "l", "þ": "th", "ð": "d"}
_APOSTROPHES = "\u2019\u02bc\uff07"


def _fold_table() -> dict[int, str | None]:
    table: dict[int, str | None] = {ord(a): "'" for a in _APOSTROPHES}
    table.update(dict.fromkeys(range(0x0300, 0x0370)))  # combining diacritical marks go
    for low, high in _FOLDED_BLOCKS:
        for code in range(low, high + 1):
            char = chr(code)
            base = "".join(
                c for c in unicodedata.normalize("NFD", char) if not unicodedata.combining(c)
            )
            if base and base != char:
                table[code] = base
    for char, plain in _LIGATURES.items():  # folding follows lower-casing
        table[ord(char)] = plain
    return table


_FOLD = _fold_table()


def fold(text: str, *, lower: bool = True) -> str:
    """``text`` in NFKC form, lower case (unless not ``lower``), diacritics off."""
    text = unicodedata.normalize("NFKC", text)
    return (text.lower() if lower else text).translate(_FOLD)


_NON_ASCII = re.compile(r"[^\x00-\x7f]")


@functools.cache
def _is_separator(char: str) -> bool:
    """Whether every tokenizer reads this non-ASCII character as a separator (and only that)."""
    plain = unicodedata.normalize("NFKC", char)
    return char not in _APOSTROPHES and not any(c.isalnum() or c in "'_" for c in plain)


def ascii_equivalent(text: str) -> str | None:
    """``text`` with its non-ASCII characters as spaces when each is only a separator (a dash,
    an arrow, a quote mark), so the ASCII tokenizer gives the same words; else None."""
    if all(_is_separator(c) for c in set(_NON_ASCII.findall(text))):
        return _NON_ASCII.sub(" ", text)
    return None


def bigrams(run: str) -> list[str]:
    """Overlapping character pairs of an unspaced run; a one-character run stays whole."""
    return [run[i : i + 2] for i in range(len(run) - 1)] or [run]


def words(text: str) -> list[str]:
    """Folded words of ``text`` in order (split at ``_`` and camelCase); unspaced runs become
    their bigrams."""
    text = _CAMEL.sub(" ", text)
    out: list[str] = []
    for run, word in _TOKEN.findall(fold(text)):
        if run:
            out += bigrams(run)
        else:
            out.append(word)
    return out


def is_gram(term: str) -> bool:
    """Whether ``term`` is a piece of an unspaced run (a bigram or a lone character)."""
    return len(term) <= 2 and _UNSPACED_CHAR.match(term) is not None


def unspaced_grams(*texts: str) -> str | None:
    """The bigrams of every unspaced run in ``texts``, space-separated (for the full-text
    index, whose tokenizer keeps a run whole); None when there are none."""
    found: list[str] = []
    for text in texts:
        if text and not text.isascii():
            found += (g for g in words(text) if is_gram(g))
    return " ".join(found) or None
