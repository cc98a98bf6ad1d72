"""The findings of a brief: every entry of the sessions read, scored against the task.

Every session of the relevant sessions' projects is read, newest first: the newest says where
work stands (its blocker, its failing test) often in words the task does not use, and a later
decision settles a question an earlier session left open. Entries are scored, ranked, linked
to the earlier decisions they reverse, and made findings without repeats.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memoryd.replies import FindingJson
from memoryd.sessions import _findings as fx
from memoryd.sessions import _relevance as rel
from memoryd.sessions._sections import SECTION_ACTIVE, SECTION_SUMMARY, Entry, SessionDoc

MIN_ENTRY_TERMS = 3
"""Entries with fewer content terms ("No open items.") carry nothing to cite."""
CONTAINED = 0.75
"""An entry whose terms are this much inside an already chosen finding repeats it."""
CONFLICT_OVERLAP = 0.4
"""How much of its (IDF-weighted) wording a reversal must share with an earlier decision."""
CURRENT_STATE_BONUS = 0.25
"""Extra weight for the active state of the newest session read: where work stands."""
BACKGROUND_FACTOR = 0.5
"""Weight of a session read only because it belongs to the project (not ranked relevant)."""
BACKGROUND_MATCH = 0.2
"""Share of the task's (IDF-weighted) words an entry of such a session must contain."""
CURRENT_TROUBLE_SCORE = 10.0
"""Puts the newest session's blockers and failing tests first, so the budget never cuts them."""
FINDINGS_CONSIDERED = 200
"""Ranked findings checked for repeats and conflicts: more than the largest budget shows."""
SETTLED_SHARE = 0.4
"""Share of an open question's words (not IDF-weighted) a later decision must use to settle it."""
SETTLED_MIN_SHARED = 3
"""Distinct words a later decision must share with the open question."""

_CURRENT_TROUBLE = re.compile(
    r"\b(blocker|blocked|blocking|failing|fails|failed|broken|red)\b", re.IGNORECASE
)

# Decisions, failures and open points change what the next session does; a
# plain "did X" outcome only helps when it is squarely about the task.
_TYPE_BONUS = {fx.FAILED: 0.5, fx.DECISION: 0.5, fx.OPEN: 0.45, fx.OUTCOME: 0.0}
_MATCH_WEIGHT = {fx.FAILED: 1.0, fx.DECISION: 1.0, fx.OPEN: 1.0, fx.OUTCOME: 0.6}


@dataclass(slots=True)
class Session:
    """A session file being read for a brief: its entries and tokens, and its relevance."""

    doc: SessionDoc
    entries: list[tuple[Entry, set[str]]]
    terms: set[str]
    sequence: list[str]  # entry tokens in order, entries separated by blanks
    date: str
    coverage: float = 0.0  # relevance to the task, see brief.SESSION_THRESHOLD
    evidence: int = 0  # how many of its entries bear on the task


Scored = tuple[float, Entry, set[str], str, Session]
"""(score, entry, its terms, its kind, its session)."""


def every_session_of(found: Sequence[Session], sessions: Sequence[Session]) -> list[Session]:
    """All sessions of the projects ``found`` belongs to, newest first."""
    projects = {s.doc.project for s in found}
    chosen = [s for s in sessions if s.doc.project in projects]
    return sorted(chosen, key=lambda s: s.doc.session, reverse=True)


def collect(
    query: set[str],
    chosen: list[Session],
    found: list[Session],
    idf: dict[str, float],
    size: int,
) -> list[FindingJson]:
    """Every entry of the sessions read as findings, best first, contradictions attached (an open
    question a later decision answers left out)."""
    ranked = _ranked(_scored(query, chosen, found, idf, size), found)
    conflicts = {  # entry id -> the earlier decision it reverses
        id(entry): earlier
        for _, entry, terms, _, session in ranked
        if (earlier := _contradicted(entry, terms, session, chosen=chosen, idf=idf, size=size))
        is not None
    }
    return _findings(ranked, conflicts)


def _scored(
    query: set[str], chosen: list[Session], found: list[Session], idf: dict[str, float], size: int
) -> list[Scored]:
    """Every entry worth showing, scored; an open question a later decision settles gives its
    place (and at least its rank) to that decision, listed after the other entries."""
    total = sum(rel.weight(t, idf, size) for t in query) or 1.0
    newest = max((s.doc.session for s in chosen), default="")
    newest_relevant = max((s.doc.session for s in found), default="")
    top = max((s.coverage for s in found), default=1.0)
    scored: list[Scored] = []
    settlers: list[Scored] = []
    for session in chosen:
        relevant = any(session is f for f in found)
        # Equally relevant sessions weigh the same; weaker ones less, but still count.
        factor = 0.5 + 0.5 * session.coverage / top if relevant else BACKGROUND_FACTOR
        for entry, terms in session.entries:
            if entry.section == SECTION_SUMMARY or len(terms) < MIN_ENTRY_TERMS:
                continue
            kind = fx.classify(entry)
            match = rel.overlap(query, terms, idf, size) / total
            active = entry.section == SECTION_ACTIVE
            trouble = (
                session.doc.session == newest and active and _CURRENT_TROUBLE.search(entry.text)
            )
            if not trouble and (
                (match == 0 and kind == fx.OUTCOME) or (not relevant and match < BACKGROUND_MATCH)
            ):
                continue  # an unrelated "merged, shipped" line adds nothing
            current = active and session.doc.session == newest_relevant
            score = factor * (
                _MATCH_WEIGHT[kind] * match + _TYPE_BONUS[kind] + CURRENT_STATE_BONUS * current
            )
            if fx.INSTRUCTION.search(entry.text):
                score /= 2  # shown quoted at best; never crowds out real evidence
            elif trouble:
                score += CURRENT_TROUBLE_SCORE
            settler = _settled_later(terms, session, chosen) if kind == fx.OPEN else None
            if settler is not None:
                settlers.append((score, settler[0], settler[1], fx.DECISION, settler[2]))
            else:
                scored.append((score, entry, terms, kind, session))
    return scored + settlers


def _ranked(scored: list[Scored], found: list[Session]) -> list[Scored]:
    """One item per entry at its best score, best first (then newer session, file order); the
    newest session's trouble first, then the best item of every relevant session (the budget
    trims from the end), then the rest."""
    best: dict[int, Scored] = {}
    for item in scored:
        if id(item[1]) not in best or item[0] > best[id(item[1])][0]:
            best[id(item[1])] = item
    ranked = list(best.values())
    ranked.sort(key=lambda item: item[1].first_line)
    ranked.sort(key=lambda item: item[4].doc.session, reverse=True)
    ranked.sort(key=lambda item: -item[0])
    first = [item for item in ranked if item[0] >= CURRENT_TROUBLE_SCORE]
    cited = {id(item[4]) for item in first}
    for item in ranked:
        relevant = any(item[4] is f for f in found)
        if item[0] < CURRENT_TROUBLE_SCORE and relevant and id(item[4]) not in cited:
            cited.add(id(item[4]))
            first.append(item)
    taken = {id(item) for item in first}
    return (first + [item for item in ranked if id(item) not in taken])[:FINDINGS_CONSIDERED]


def _findings(
    ranked: list[Scored], conflicts: dict[int, tuple[Entry, Session]]
) -> list[FindingJson]:
    """The findings in rank order without repeats; a reversed decision is shown beside its
    reversal, not on its own."""
    reversed_ids = {id(old) for old, _ in conflicts.values()}
    findings: list[FindingJson] = []
    kept: list[set[str]] = []
    for _, entry, terms, kind, session in ranked:
        if id(entry) in reversed_ids or any(
            len(terms & other) >= CONTAINED * len(terms) for other in kept
        ):
            continue
        kept.append(terms)
        finding = fx.make_finding(entry, kind, fx.source(entry, session.doc.filename, session.date))
        earlier = conflicts.get(id(entry))
        if earlier is not None and not finding["quoted"]:
            old, old_session = earlier
            where = fx.source(old, old_session.doc.filename, old_session.date)
            text = " ".join(old.text.split()).rstrip(".")
            finding["evidence"] = "conflicting"
            finding["conflicts_with"] = {**where, "text": text}
        findings.append(finding)
    return findings


def _settled_later(
    terms: set[str], session: Session, chosen: list[Session]
) -> tuple[Entry, set[str], Session] | None:
    """The decision of a later session that answers this open question, if any (newest)."""
    for later in chosen:  # newest first
        if later.doc.session <= session.doc.session:
            break
        for entry, later_terms in later.entries:
            shared = len(terms & later_terms)
            settles = shared >= SETTLED_MIN_SHARED and shared >= SETTLED_SHARE * len(terms)
            if settles and fx.classify(entry) == fx.DECISION:
                return entry, later_terms, later
    return None


def _contradicted(
    entry: Entry,
    terms: set[str],
    session: Session,
    *,
    chosen: list[Session],
    idf: dict[str, float],
    size: int,
) -> tuple[Entry, Session] | None:
    """An earlier decision this entry reverses, if one shares its distinctive terms."""
    if not fx.REVERSAL.search(entry.text):
        return None
    best: tuple[float, Entry, Session] | None = None
    for other in chosen:
        if other.doc.session >= session.doc.session:
            continue
        for old, old_terms in other.entries:
            if fx.classify(old) != fx.DECISION or fx.REVERSAL.search(old.text):
                continue
            shared = rel.overlap(terms, old_terms, idf, size)
            smaller = min(
                sum(rel.weight(t, idf, size) for t in terms),
                sum(rel.weight(t, idf, size) for t in old_terms),
            )
            strength = shared / smaller if smaller else 0.0
            if (
                len(terms & old_terms) >= 2
                and strength >= CONFLICT_OVERLAP
                and (best is None or strength > best[0])
            ):
                best = (strength, old, other)
    return None if best is None else (best[1], best[2])
