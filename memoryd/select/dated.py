"""What dates and "(current)" / "(old)" markers say about which memory is current.

Of same-type, same-titled memories with their own dates, the earlier is stale
(``SERIES_MIN`` or more are a series); a stated validity has ended once a memory
of the folder is dated later; "(old)" (or ``_old.md``) makes a memory stale, and
"(current)" its same-subject siblings.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache

from memoryd.select._text import terms
from memoryd.select.analysis import TYPE_PREFIXES, filename_text
from memoryd.select.candidates import Candidate

Day = tuple[int, int, int]  # a month or quarter reads as its last day

SERIES_MIN = 4  # this many same-titled dated memories are a series, not versions of one
SAME_TITLE = 0.75  # share of title words (Jaccard) two versions of one memory share
_DATE_KEYS = ("updated", "last_updated", "last_verified", "date", "created")
_END_KEYS = ("valid_until", "expires")

_MONTH_NAMES = (
    *("jan january", "feb february", "mar march", "apr april", "may", "jun june"),
    *("jul july", "aug august", "sep sept september", "oct october"),
    *("nov november", "dec december"),
)
_MONTHS = {m: i for i, names in enumerate(_MONTH_NAMES, start=1) for m in names.split()}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DATE = re.compile(
    r"(?<!\d)(?P<y>20\d\d)(?:[-/._]?(?P<m>0[1-9]|1[0-2])(?:[-/._]?(?P<d>0[1-9]|[12]\d|3[01]))?"
    r"(?!\d)|[-_ ]?q(?P<q>[1-4])\b)"
    r"|(?P<cy>20\d\d)\s*年\s*(?P<cm>1[0-2]|0?[1-9])\s*月(?:\s*(?P<cd>3[01]|[12]\d|0?[1-9])\s*日)?"
    r"|\bq(?P<q2>[1-4])[ -]?(?P<qy>20\d\d)\b"
    rf"|\b(?:(?P<d1>[12]\d|3[01]|0?[1-9])\s+)?(?P<mon>{_MONTH})\.?"
    r"(?:\s+(?P<d2>[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?,?)?\s+(?P<my>20\d\d)\b",
    re.IGNORECASE,
)
DATE_FORMS = re.sub(r"\(\?P<\w+>", "(?:", _DATE.pattern)  # the same, without named groups
_VALID_UNTIL = re.compile(
    r"\b(?:valid|effective|good|applies|in (?:effect|force))?\s*(?:until|till|through|thru)\b"
    r"|\bexpir(?:es|ed|y)\b|\bends? on\b",
    re.IGNORECASE,
)
_TYPE_WORDS = frozenset(TYPE_PREFIXES)
_END_WORDS = ("until", "till", "through", "thru", "expir", "end")  # one in every match above
_GAP = re.compile(r"[\s:,]*(?:the\s+|end\s+of\s+)?")
_MARKERS = frozenset(terms("old legacy previous current latest new updated draft final copy v"))
_NOT_SUBJECT = _MARKERS | _TYPE_WORDS | frozenset(_MONTHS)
_END_OF = {2: 28, 4: 30, 6: 30, 9: 30, 11: 30}
SIBLING_MIN_OVERLAP = 0.5  # share of title words two memories share "on the same subject"
_CURRENT_MARK = re.compile(r"[(\[]\s*(?:current|latest|up[- ]to[- ]date)\s*[)\]]|^current\b", re.I)
_OLD_MARK = re.compile(
    r"[(\[]\s*(?:old|legacy|previous|outdated|superseded|deprecated|archived)\s*[)\]]", re.I
)
_OLD_FILE = re.compile(
    r"[_-](?:old|outdated|deprecated|obsolete|superseded|archived|stale)\.md$", re.IGNORECASE
)
MARK_WORDS = frozenset(terms("current latest up to date old legacy previous"))
_NOT_MARKED = MARK_WORDS | frozenset(TYPE_PREFIXES)


def _day(m: re.Match[str]) -> Day:
    g = m.groupdict()
    if g["q"] or g["q2"]:
        return int(g["y"] or g["qy"]), 3 * int(g["q"] or g["q2"]), 31
    month = int(g["m"]) if g["y"] else int(g["cm"]) if g["cy"] else _MONTHS[g["mon"].lower()]
    day = g["d"] or g["cd"] or g["d1"] or g["d2"]
    return int(g["y"] or g["cy"] or g["my"]), month, int(day or _END_OF.get(month, 31))


def dates_in(text: str) -> list[Day]:
    """Every date written in ``text``, in order."""
    return [_day(m) for m in _DATE.finditer(text)] if text else []


def _header_dates(c: Candidate, keys: Sequence[str]) -> list[Day]:
    return [d for key in keys if isinstance(v := c.header.get(key), str) for d in dates_in(v)]


def own_date(c: Candidate) -> Day | None:
    """The memory's own date: a header field, else title, description or filename, else body."""
    for found in (
        _header_dates(c, _DATE_KEYS),
        dates_in(f"{c.name}\n{c.description}\n{c.filename}"),
        dates_in(c.body),
    ):
        if found:
            return max(found)
    return None


def valid_until(c: Candidate) -> Day | None:
    """The end of the validity the memory states for itself, if it states one."""
    found = _header_dates(c, _END_KEYS)
    head = f"{c.name}\n{c.description}\n" + "\n".join(c.body.splitlines()[:3])
    for m in _VALID_UNTIL.finditer(head) if _may_state_end(head) else ():
        # The date must follow the word at once ("until 2025-03-01").
        date = _DATE.match(head, m.end() + len(_GAP.match(head, m.end()).group()))  # type: ignore[union-attr]
        if date is not None:
            found.append(_day(date))
    return min(found) if found else None


def _may_state_end(head: str) -> bool:
    """False when ``head`` cannot state an end of validity (the pattern is slow to fail)."""
    return "20" in head and (not head.isascii() or any(w in head.lower() for w in _END_WORDS))


@lru_cache(maxsize=4096)
def _subject_words(title: str) -> frozenset[str]:
    """A title's terms but markers, types, months, single letters and numbers."""
    words = terms(title)
    kept = {t for t in words if len(t) > 1 and (t.isalpha() or not any(map(str.isdigit, t)))}
    return frozenset(kept - _NOT_SUBJECT)


def _same_title(shared: int, a: int, b: int) -> bool:
    """Whether titles of ``a`` and ``b`` subject words, ``shared`` of them in common, are one."""
    return shared > 0 and shared / (a + b - shared) >= SAME_TITLE


def _rarest(
    kind: str | None, words: frozenset[str], held: Counter[tuple[str | None, str]]
) -> list[str]:
    """The rarest of ``words``, of which every same-titled sibling holds one."""
    keep = len(words) - math.ceil(SAME_TITLE * len(words)) + 1
    return sorted(words, key=lambda w: (held[(kind, w)], w))[:keep]


def newer_sibling_edges(everyone: Sequence[Candidate]) -> list[tuple[str, str | None]]:
    """(older, newer) pairs among same-type, same-titled memories that carry their own dates."""
    subjects = [_subject_words(f"{c.name} {filename_text(c.filename)}") for c in everyone]
    held = Counter((c.type, w) for c, words in zip(everyone, subjects, strict=True) for w in words)
    prefixes = [_rarest(c.type, words, held) for c, words in zip(everyone, subjects, strict=True)]
    by_word: dict[tuple[str | None, str], list[int]] = {}
    for i, (c, words) in enumerate(zip(everyone, prefixes, strict=True)):
        for w in words:
            by_word.setdefault((c.type, w), []).append(i)
    dates: dict[int, Day | None] = {}

    def date_of(i: int) -> Day | None:
        if i not in dates:
            dates[i] = own_date(everyone[i])
        return dates[i]

    edges: list[tuple[str, str | None]] = []
    for i, c in enumerate(everyone):
        mine_words = subjects[i]
        near = {j for w in prefixes[i] for j in by_word[(c.type, w)]}
        group = sorted(
            j
            for j in near
            if _same_title(len(mine_words & subjects[j]), len(mine_words), len(subjects[j]))
        )
        mine = date_of(i) if 2 <= len(group) < SERIES_MIN else None
        if mine is None:
            continue
        dated = [(d, j) for j in group if (d := date_of(j)) is not None]
        newest = max(d for d, _ in dated)
        if mine < newest:
            successor = min(j for d, j in dated if d == newest)
            edges.append((c.filename, everyone[successor].filename))
    return edges


def ended_edges(everyone: Iterable[Candidate]) -> list[tuple[str, str | None]]:
    """(memory, None) for memories whose stated validity ended before the folder's latest date."""
    members = list(everyone)
    ends = {c.filename: end for c in members if (end := valid_until(c)) is not None}
    if not ends:
        return []
    latest = max((d for c in members if (d := own_date(c)) is not None), default=None)
    return [(fn, None) for fn, end in ends.items() if latest is not None and end < latest]


@lru_cache(maxsize=2048)  # one folder's titles and references; each costs ~0.5 kB
def term_set(text: str) -> frozenset[str]:
    return frozenset(terms(text))


def title_text(c: Candidate) -> str:
    return f"{c.name} {c.filename.removesuffix('.md').replace('_', ' ')}"


def title_terms(c: Candidate) -> frozenset[str]:
    return term_set(title_text(c))


def latest_written(c: Candidate) -> tuple[int, int, int, float]:
    """The latest date written in the memory, then its mtime."""
    return (*max(dates_in(f"{c.name}\n{c.description}\n{c.body}"), default=(0, 0, 0)), c.mtime)


def marked_edges(everyone: Sequence[Candidate]) -> list[tuple[str, str | None]]:
    """(old, current) pairs from "(old)" / ``_old.md`` and "(current)" marks."""
    current = {c.filename for c in everyone if _CURRENT_MARK.search(f"{c.name}\n{c.description}")}
    old = {c.filename for c in everyone if _OLD_MARK.search(c.name) or _OLD_FILE.search(c.filename)}
    edges: list[tuple[str, str | None]] = [(fn, None) for fn in sorted(old - current)]
    for a in everyone:
        if a.filename not in current and a.filename not in old:
            continue
        mine = title_terms(a) - _NOT_MARKED
        for b in everyone:
            if b is a or b.type != a.type or not _same_subject(mine, title_terms(b) - _NOT_MARKED):
                continue
            if a.filename in current and b.filename not in current:
                edges.append((b.filename, a.filename))
            elif a.filename in old and b.filename not in old:
                edges.append((a.filename, b.filename))
    return edges


def _same_subject(a: frozenset[str], b: frozenset[str]) -> bool:
    shared = len(a & b)
    return shared > 0 and shared >= SIBLING_MIN_OVERLAP * min(len(a), len(b))
