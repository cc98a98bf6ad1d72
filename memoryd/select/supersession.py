"""Which memories are stale, and which memory took their place, from their own words.

A stale banner in the old memory, a claim in the new one ("supersedes", ...),
markers and dates (:mod:`.dated`); what memories say outranks what markers and
dates infer. Of two memories that claim to replace each other, the one written
later is current.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from memoryd.select._text import terms
from memoryd.select.candidates import Candidate
from memoryd.select.dated import (
    DATE_FORMS,
    MARK_WORDS,
    ended_edges,
    latest_written,
    marked_edges,
    newer_sibling_edges,
    term_set,
    title_terms,
    title_text,
)

SUPERSEDE_MIN_OVERLAP = 0.5  # share of a reference's words a title must hold to be the one meant


_WORD_STATUS = (
    r"(?:superseded|deprecated|outdated|out[- ]of[- ]date|obsolete|stale|archived|historical)"
)
_PHRASE_STATUS = (
    r"(?:no longer (?:true|used|valid|accurate|current|relevant|applies|applicable|in use|the case)"
    r"|replaced(?:[ \t]*[-–—:])? (?:by|with)|moved (?:to|into)"
    r"|kept (?:only )?(?:as|for) (?:a )?(?:history|historical|reference|the record))"
)
_STATUS = rf"(?:{_WORD_STATUS}|{_PHRASE_STATUS})"
# After a one-word status, what makes it a statement ("Stale since May"), not an adjective.
_STATEMENT_END = r"(?=\s*(?:$|[:.;,!)\]*_—–-]|(?:by|with|in favou?r of|since|as of|see)\b))"
_SELF = r"(?:memory|note|file|entry|page|doc|document|decision|record|rule|approach|info)"
_LABEL = r"(?:note|update|updated|status|warning|heads[- ]up|caution|important|edit)"
_BANNER_LINE = re.compile(
    rf"^[\s>#*_\[!(⚠️🚫❗\-–—]*?(?:{_LABEL}\b[^:\n]{{0,20}}[:\-–—)\]]\s*+[*_]*+\s*+)?"
    rf"(?:this {_SELF}\s++(?:is|was|has been)\s++(?:now\s++)?)?"
    rf"(?P<status>{_WORD_STATUS}\b{_STATEMENT_END}|{_PHRASE_STATUS}\b)(?P<rest>.*)$",
    re.IGNORECASE,
)
_STATUS_WHEN = re.compile(
    rf"\b(?P<said>{_WORD_STATUS}|replaced)(?:[ \t]*+[(\[][ \t]*+(?:(?:on|in|since|as of)[ \t]++)?"
    rf"(?:{DATE_FORMS})[ \t]*+[)\]]|[ \t]*+(?:[-–—,:][ \t]*+)?(?:(?:on|in)[ \t]++)?"
    rf"(?:{DATE_FORMS})(?![\w/-]|\.\w))",
    re.IGNORECASE,
)
_BULLET = re.compile(r"^\s*(?:[-+]|\*(?!\*)|\d+[.)])\s")
_SELF_STATEMENT = re.compile(
    rf"\bthis {_SELF}\s+(?:is|was|has been)\s+(?:now\s+)?(?P<status>{_STATUS})\b(?P<rest>[^\n]*)",
    re.IGNORECASE,
)
_KEPT_AS_HISTORY = re.compile(
    r"\bkept (?:here )?(?:only )?(?:as|for) (?:a )?(?:history|historical|the record)",
    re.IGNORECASE,
)
_NEW_VERB = re.compile(
    r"\b(?:supersedes|replaces|obsoletes|replaced(?![ \t]*[-–—:]? (?:by|with)\b)|migrated from"
    r"|is the (?:current|new|updated|latest) version of)\b:?\s*(?P<rest>[^\n]{0,160})",
    re.IGNORECASE,
)
_HEADER_KEYS = ("superseded_by", "replaced_by", "status", "supersedes", "replaces")
_HEADER_STATUS = re.compile(rf"{_WORD_STATUS}(?:\b.*)?", re.IGNORECASE)
_RETIRED_MARK = r"\([ \t]*(?:superseded|obsolete|outdated|no longer used)[ \t]*\)"
_SUBJECT_RETIRED = re.compile(
    rf"(?:`(?P<code>[^`\n]{{2,80}})`|(?P<word>[\w./-]{{3,80}}))[ \t]*{_RETIRED_MARK}",
    re.IGNORECASE,
)
# Cheap screens before two costly patterns.
_RETIREMENT = re.compile(_RETIRED_MARK, re.IGNORECASE)
_VERBS = ("supersedes", "replaces", "obsoletes", "replaced", "migrated from", "version of")
_LINK_TARGET = re.compile(r"\]\(\s*<?(?:[^()\s]*/)?(?P<file>[^()/\s]+\.md)>?\s*\)")
_FILENAME = re.compile(r"(?<![\w/.-])(?P<file>[\w.-]+\.md)\b")
_QUOTED = re.compile(r"[\"“](?P<title>[^\"”\n]{3,120})[\"”]")
_CLAUSE_END = re.compile(r"[.;:!?()\[\]]|\s[-–—]\s")
_LEAD_IN = re.compile(
    r"^\s*(?:by|with|to|into|from|see|in favou?r of|the|a|an|old|older|previous|earlier|\s)+",
    re.IGNORECASE,
)
_STATUS_MARK = re.compile(rf"[(\[]\s*{_STATUS}\s*[)\]]", re.IGNORECASE)
_NO_DATE = (0, 0, 0, 0.0)
SIGNAL_WORDS = [  # one is in every stale-or-successor statement (an FTS5 prefilter)
    *("supersedes", "superseded", "replaces", "replaced", "obsoletes", "obsolete"),
    *("deprecated", "outdated", "migrated", "archived", "historical", "history", "stale"),
]
_TRIGGERS = (  # a piece of every statement the patterns above match
    *("supersed", "deprecated", "outdated", "of date", "of-date", "obsolete", "stale"),
    *("archived", "historical", "no longer", "replace", "moved", "kept", "migrated", "version of"),
)


def _may_signal(c: Candidate) -> bool:
    """False when ``c`` (ASCII) holds none of ``_TRIGGERS``: no pattern can match."""
    if c.header and any(key in c.header for key in _HEADER_KEYS):
        return True
    text = f"{c.name}\n{c.description}\n{c.body}"
    if not text.isascii():
        return True
    low = text.lower()
    return any(t in low for t in _TRIGGERS)


def _header_values(c: Candidate, keys: Sequence[str]) -> list[str]:
    """The header's values under ``keys`` as strings (a list gives each of its items)."""
    out: list[str] = []
    for key in keys:
        value = c.header.get(key)
        out += value if isinstance(value, list) else [value] if isinstance(value, str) else []
    return out


def _header_banner(c: Candidate) -> str | None:
    """``superseded_by:`` / ``replaced_by:`` naming the successor, or a stale ``status:``."""
    successors = _header_values(c, ("superseded_by", "replaced_by"))
    if successors:
        return " ".join(successors)
    status = _header_values(c, ("status",))
    if status and _HEADER_STATUS.fullmatch(status[0].strip()):
        return ""
    return None


class _Titles:
    """Resolves a reference (filename, link or words) to the memory it names."""

    def __init__(self, everyone: Sequence[Candidate]) -> None:
        self.everyone = everyone
        self.by_file = {c.filename: i for i, c in enumerate(everyone)}
        self._by_term: dict[str, list[int]] | None = None

    @property
    def by_term(self) -> dict[str, list[int]]:
        """Term -> the memories whose title holds it, built when first needed."""
        if self._by_term is None:
            self._by_term = {}
            for i, c in enumerate(self.everyone):
                for t in set(terms(title_text(c))):
                    self._by_term.setdefault(t, []).append(i)
        return self._by_term

    def named_files(self, text: str) -> list[str]:
        """Memories ``text`` names by filename or Markdown link target."""
        found = [m.group("file") for m in _LINK_TARGET.finditer(text)]
        found += [m.group("file") for m in _FILENAME.finditer(text)]
        return [f for f in dict.fromkeys(found) if f in self.by_file]

    def titled(self, subjects: Sequence[str], by: Candidate) -> list[str]:
        """Memories other than ``by`` whose title holds every word of a subject ``by`` retires
        (unless ``by``'s own title does)."""
        out: list[str] = []
        if not subjects:
            return out
        mine = title_terms(by)
        for subject in subjects:
            words = term_set(subject) - MARK_WORDS
            if not words or words <= mine:
                continue
            holders = set.intersection(*(set(self.by_term.get(t, ())) for t in words))
            out += (self.everyone[i].filename for i in sorted(holders))
        return [fn for fn in out if fn != by.filename]

    def best_title(self, refs: Iterable[str], exclude: str) -> str | None:
        """The memory whose title covers most of a reference's words (ties: earlier file)."""
        best: tuple[float, int] | None = None
        for ref in refs:
            ref_terms = term_set(ref) - MARK_WORDS
            if not ref_terms:
                continue
            shared: Counter[int] = Counter()
            for t in ref_terms:
                shared.update(self.by_term.get(t, ()))
            for i, n in shared.items():
                score = n / len(ref_terms)
                if self.everyone[i].filename == exclude or score < SUPERSEDE_MIN_OVERLAP:
                    continue
                if best is None or (score, -i) > (best[0], -best[1]):
                    best = (score, i)
        return None if best is None else self.everyone[best[1]].filename


def _phrase_refs(text: str, quoted_only: bool) -> list[str]:
    """Titles a clause names: quoted ones, else (unless ``quoted_only``) its first words."""
    quoted = [m.group("title") for m in _QUOTED.finditer(text)]
    if quoted or quoted_only:
        return quoted
    clause = _CLAUSE_END.split(text, maxsplit=1)[0]
    words = _LEAD_IN.sub("", clause).strip()
    return [words] if words else []


def _undated(text: str) -> str:
    """``text`` with the date a status took effect set aside ("Superseded (2025-04): ...")."""
    return _STATUS_WHEN.sub(r"\g<said>", text) if "20" in text else text


def stale_banner(c: Candidate) -> str | None:
    """The text after a status note by which ``c`` says it is stale, or None: in its name,
    description, first three body lines, a quote/heading/label line, or a "this note is"."""
    from_header = _header_banner(c)
    if from_header is not None:
        return from_header
    name, description, body = _undated(c.name), _undated(c.description), _undated(c.body)
    for text, is_name in ((name, True), (description, False)):
        # "(deprecated)" labels the memory where it opens its name or description or closes
        # its name; elsewhere it labels a noun.
        marked = _STATUS_MARK.search(text)
        if marked is not None and (
            not text[: marked.start()].strip(" \t*_-—–:")
            or (is_name and not text[marked.end() :].strip(" \t.*_"))
        ):
            after = text[marked.end() :]
            return f"{after}\n{description}" if is_name else after
    lines = [name, description]
    body_lines = [ln for ln in body.splitlines() if ln.strip()]
    for n, line in enumerate(body_lines):
        if n < 3 or line.lstrip().startswith((">", "#", "**", "__", "[!")) or ":" in line[:30]:
            lines.append(line)
    for line in lines:
        if _BULLET.match(line):
            continue
        m = _BANNER_LINE.match(line)
        # "Moved to Postgres" is news unless a memory file is named.
        if m is not None and not (
            m.group("status").lower().startswith("moved") and ".md" not in line
        ):
            return m.group("rest")
    text = f"{description}\n{body}"
    m = _SELF_STATEMENT.search(text)
    if m is not None:
        return m.group("rest")
    m = _KEPT_AS_HISTORY.search(text)
    return text[m.end() :] if m is not None else None


def _retired(c: Candidate) -> tuple[str, ...]:
    """Subjects ``c`` marks "(superseded)", "(obsolete)", "(outdated)" or "(no longer used)"."""
    text = _undated(f"{c.description}\n{c.body}")
    if _RETIREMENT.search(text) is None:
        return ()
    return tuple(m.group("code") or m.group("word") for m in _SUBJECT_RETIRED.finditer(text))


def _claims(c: Candidate) -> list[str]:
    """Clauses in which ``c`` says it replaces something (the words after the verb)."""
    text = _undated(f"{c.description}\n{c.body}")
    said: list[str] = []
    if not text.isascii() or any(verb in text.lower() for verb in _VERBS):
        said = [m.group("rest") for m in _NEW_VERB.finditer(text)]
    return said + _header_values(c, ("supersedes", "replaces"))


@dataclass(frozen=True, slots=True)
class Signals:
    """What a memory's text says: a stale banner, clauses in which it replaces others,
    subjects it marks "(superseded)"."""

    banner: str | None = None
    claims: tuple[str, ...] = ()
    retired: tuple[str, ...] = ()


NO_SIGNALS = Signals()


def signals_of(c: Candidate) -> Signals:
    """The signals in ``c``'s text (:data:`NO_SIGNALS` for the many that have none)."""
    if not _may_signal(c):
        return NO_SIGNALS
    banner, claims, retired = stale_banner(c), tuple(_claims(c)), _retired(c)
    if banner is None and not claims and not retired:
        return NO_SIGNALS
    return Signals(banner, claims, retired)


def _edges(
    signalled: Iterable[tuple[Candidate, Signals]], titles: _Titles, quoted_only: bool
) -> list[tuple[str, str | None]]:
    """(old, new) pairs from what each memory says; ``new`` may be unknown."""
    edges: list[tuple[str, str | None]] = []
    for c, said in signalled:
        if said.banner is not None:
            named = titles.named_files(said.banner)
            successor = named[0] if named else None
            if successor is None:
                successor = titles.best_title(_phrase_refs(said.banner, quoted_only), c.filename)
            edges.append((c.filename, successor if successor != c.filename else None))
        for clause in said.claims:
            named = [f for f in titles.named_files(clause) if f != c.filename]
            old = named[0] if named else None
            if old is None:
                old = titles.best_title(_phrase_refs(clause, quoted_only), c.filename)
                if old is not None and titles.everyone[titles.by_file[old]].type != c.type:
                    old = None
            if old is not None:
                edges.append((old, c.filename))
        edges += ((old, c.filename) for old in titles.titled(said.retired, c))
    return edges


def superseded_from(
    signalled: Iterable[tuple[Candidate, Signals]],
    everyone: Sequence[Candidate],
    quoted_only: bool,
) -> dict[str, str | None]:
    """Each stale memory's filename -> its live successor (None when none is named), from
    the ``signalled`` texts and ``everyone``'s headers; ``quoted_only`` (a large folder):
    plain words after "replaces" name no memory, and markers and dates are not read."""
    by_file = {c.filename: c for c in everyone}

    def written(filename: str) -> tuple[int, int, int, float]:
        c = by_file.get(filename)
        return _NO_DATE if c is None else latest_written(c)

    out: dict[str, str | None] = {}
    _link(out, _edges(signalled, _Titles(everyone), quoted_only), written)
    if not quoted_only:
        said = dict(out)
        inferred = [*marked_edges(everyone), *newer_sibling_edges(everyone)]
        inferred += ended_edges(everyone)
        # Words saying that one is stale outrank a marker or a date.
        kept = [(o, n) for o, n in inferred if n not in said or _live_end(said, n) not in (None, o)]
        _link(out, kept, written)
    return {old: _live_end(out, old) for old in out}


def _link(
    out: dict[str, str | None],
    edges: Iterable[tuple[str, str | None]],
    written: Callable[[str], tuple[int, int, int, float]],
) -> None:
    """Add (old, new) ``edges`` to ``out``; of two said to replace each other the one
    written later is current."""
    for old, new in edges:
        if new is not None and out.get(new) == old:
            if written(new) <= written(old):
                continue
            del out[new]
        if out.get(old) is None:
            out[old] = new


def _live_end(links: dict[str, str | None], start: str) -> str | None:
    """Follow successor links from ``start`` to a memory that is not itself stale."""
    seen = {start}
    new = links[start]
    while new is not None and links.get(new) is not None and new not in seen:
        seen.add(new)
        new = links[new]
    return None if new in seen else new


def superseded_by(candidates: Sequence[Candidate]) -> dict[str, str | None]:
    """Every stale memory among ``candidates`` and its successor (None if unnamed)."""
    return superseded_from(((c, signals_of(c)) for c in candidates), candidates, False)
