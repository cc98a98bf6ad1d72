"""A short, cited brief of what earlier sessions learned that bears on a task (``context``).

Deterministic: sessions are ranked lexically against the task; when some bear on it, every
session of their project is read and its entries become findings citing file lines. Nothing
beats weak matches, and recency never admits history on its own. The lowest-ranked findings
are dropped until the text fits the budget (four characters a token).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence

from memoryd._sized_cache import SizedCache
from memoryd.indexer.parse import parse_bytes
from memoryd.indexer.records import KIND_SESSION, unexpected
from memoryd.replies import ContextReply, UnreadSession
from memoryd.sessions import _findings as fx
from memoryd.sessions import _relevance as rel
from memoryd.sessions._collect import Session, collect, every_session_of
from memoryd.sessions._sections import SECTION_SUMMARY, SessionDoc, count_of, parse_sections

MAX_ROUNDS = 2
MAX_READS = 3
"""Sessions the search rounds rank as relevant at most (all of their project is read)."""
SESSION_THRESHOLD = 0.35
"""Relevance a session needs: the IDF-weighted share of task terms it contains, plus
PAIR_BONUS for every pair of task words that also sit together in it."""
PAIR_BONUS = 0.3
FOLLOW_UP_THRESHOLD = 0.5
"""Share of the follow-up round's thread terms an earlier session must contain."""
THREAD_TERMS = 6
"""How many linking words the follow-up round searches with."""
PARSED_BYTES = 16 * 1024 * 1024
"""Memory for parsed sessions, as :func:`weight` counts it."""
SECTION_ENTRIES = 100
"""Entries read per section, so a runaway file cannot make the comparisons quadratic."""

_REFERS_BACK = re.compile(
    r"\b(session[- ]?\d+|previous session|earlier session|part \d+|resumed|reverted"
    r"|second|third)\b",
    re.IGNORECASE,
)


def estimate_tokens(text: str) -> int:
    """Rough token count: one token per four characters, rounded up."""
    return math.ceil(len(text) / 4)


def no_context_message(scope: str) -> str:
    return f"No useful prior-session context found within {scope}"


def unavailable_message(reason: str) -> str:
    return f"Session history unavailable: {reason}"


def build_brief(
    task: str,
    docs: Sequence[SessionDoc],
    *,
    scope: str,
    budget_tokens: int = 600,
    parsed: ParsedSessions | None = None,
) -> ContextReply:
    """``context``'s answer: ``docs`` searched for ``task``, a cited brief within the budget."""
    parsed = ParsedSessions() if parsed is None else parsed
    skipped: list[UnreadSession] = [
        {"filename": d.filename, "error": d.error or "unreadable"}
        for d in docs
        if d.text is None or d.error
    ]
    sessions = []
    for doc in docs:
        if doc.text is None or doc.error:
            continue
        try:
            sessions.append(parsed.session(doc))
        except Exception as exc:  # one session nothing foresaw: skipped, the brief goes on
            reason = unexpected("could not read the session", exc)
            skipped.append({"filename": doc.filename, "error": reason})
    idf, size = rel.idf_table(s.terms for s in sessions)
    words = rel.tokens(task)
    query = set(words)
    found, rounds = _search(words, sessions, idf, size)
    chosen = every_session_of(found, sessions)
    findings = collect(query, chosen, found, idf, size)
    searched = f"{count_of(len(sessions), 'session')} searched in {count_of(rounds, 'round')}"
    parts = [scope, searched, f"{len(chosen)} read"]
    if skipped:
        names = ", ".join(item["filename"] for item in skipped)
        parts.append(f"skipped {len(skipped)} corrupted: {names}")
    # Drop the lowest-ranked findings until the text fits; if not even one
    # fits, the honest answer is that nothing useful fits in the budget.
    text, kept = no_context_message(scope), findings[:0]
    for count in range(len(findings), 0, -1):
        left = len(findings) - count
        cut = [f"{left} lower-ranked findings left out for length"] if left else []
        line = "; ".join([*parts, *cut, "not re-checked against the current code"])
        candidate = "\n".join(
            ["Prior-session brief", f"Scope: {line}", *map(fx.render, findings[:count])]
        )
        if estimate_tokens(candidate) <= budget_tokens:
            text, kept = candidate, findings[:count]
            break
    return {
        "text": text,
        "status": "found" if kept else "none",
        "scope": scope,
        "findings": kept,
        "sessions_read": [s.doc.filename for s in chosen],
        "sessions_searched": len(sessions),
        "rounds": rounds,
        "skipped": skipped,
        "dropped_for_budget": len(findings) - len(kept) if kept else 0,
        "tokens": estimate_tokens(text),
        "budget_tokens": budget_tokens,
    }


class ParsedSessions:
    """Sessions already parsed, by the whole doc (text included): an unchanged file is read
    again but not parsed again."""

    def __init__(self) -> None:
        self._cache: SizedCache[SessionDoc, Session] = SizedCache(PARSED_BYTES)

    def session(self, doc: SessionDoc) -> Session:
        """A fresh :class:`Session` of ``doc`` (its relevance is set per brief)."""
        found = self._cache.get(doc)
        if found is None:
            found = _read(doc)
            self._cache.put(doc, found, weight(doc.text or ""))
        return dataclasses.replace(found)


def weight(text: str) -> int:
    """The memory a parsed session holds beside its text: about 16 bytes per character."""
    return 16 * len(text) + 1024


def _read(doc: SessionDoc) -> Session:
    """The session's entries and their tokens; the frontmatter's target dir and notes only
    help find it (findings cite body lines)."""
    text = doc.text or ""
    sections = parse_sections(text)
    sequence: list[str] = []
    entries = []
    for entry in sections.entries(limit=SECTION_ENTRIES):
        words = rel.tokens(entry.text)
        sequence += [*words, "", ""]
        entries.append((entry, set(words)))
    meta = parse_bytes(text.encode("utf-8"), KIND_SESSION).meta
    notes = [str(meta.get("target-dir") or "")]
    decisions = meta.get("checkpoint_decisions")
    if isinstance(decisions, dict):
        notes += [str(d.get("note", "")) for d in decisions.values() if isinstance(d, dict)]
    extra = [word for note in notes for word in rel.tokens(note)]
    terms = set(sequence) | set(extra)
    terms.discard("")
    date = doc.session[:10] if len(doc.session) >= 10 else doc.session
    return Session(doc=doc, entries=entries, terms=terms, sequence=sequence, date=date)


def _search(
    words: list[str], sessions: list[Session], idf: dict[str, float], size: int
) -> tuple[list[Session], int]:
    """Round one ranks sessions against the task; round two follows a thread backwards.

    Round two runs when the best session points at earlier work (a revert, "part 2") and a
    read slot is free; it searches with that session's thread terms (:func:`_thread_terms`).
    """
    query = set(words)
    if not query or not sessions:
        return [], 1
    for session in sessions:
        pairs = rel.near_pairs(words, session.sequence)
        session.coverage = rel.coverage(query, session.terms, idf, size) + PAIR_BONUS * pairs
        session.evidence = sum(rel.overlap(query, t, idf, size) > 0 for _, t in session.entries)
    found = _rank([s for s in sessions if s.coverage >= SESSION_THRESHOLD])[:MAX_READS]
    if not found or len(found) >= MAX_READS or not _REFERS_BACK.search(_summary(found[0])):
        return found, 1
    thread = _thread_terms(found[0], sessions, query, idf, size)
    extra = [
        s
        for s in sessions
        if s not in found
        and thread
        and rel.coverage(thread, s.terms, idf, size) >= FOLLOW_UP_THRESHOLD
    ]
    return found + _rank(extra)[: MAX_READS - len(found)], MAX_ROUNDS


def _rank(sessions: list[Session]) -> list[Session]:
    """Relevance first (in coarse steps), then evidence, then recency."""
    return sorted(
        sessions,
        key=lambda s: (round(s.coverage * 4), s.evidence, s.doc.session),
        reverse=True,
    )


def _summary(session: Session) -> str:
    return " ".join(e.text for e, _ in session.entries if e.section == SECTION_SUMMARY)


def _thread_terms(
    top: Session,
    sessions: list[Session],
    query: set[str],
    idf: dict[str, float],
    size: int,
) -> set[str]:
    """Summary words of ``top`` that link it to a few (not half) of the other sessions, rarest
    first."""
    shared = set()
    for term in set(rel.tokens(_summary(top))) - query:
        others = sum(term in other.terms for other in sessions if other is not top)
        if 1 <= others < max(2, len(sessions) // 2):
            shared.add(term)
    return set(sorted(shared, key=lambda t: (-rel.weight(t, idf, size), t))[:THREAD_TERMS])
