"""Which sessions a brief reads, and what a later session changes about an earlier one.

Relevance only decides *whether* a project's history bears on the task. Once it
does, every session of that project is read, newest first: work moves on, and
the newest session holds where things stand (its blocker, its failing test),
often in words the task does not use. Reading the older ones too lets a later
decision settle a question an earlier session left open, so the brief never
reports a settled question as open.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from memoryd.sessions._sections import SECTION_ACTIVE, Entry

SETTLED_SHARE = 0.4
"""Share of an open question's words that a later decision must also use to settle it.

A plain share, not IDF-weighted: a project's few sessions all talk about the same
subject, so the words that link a question to its answer are common ones."""
SETTLED_MIN_SHARED = 3
"""Distinct words a later decision must share with the open question."""

_CURRENT_TROUBLE = re.compile(
    r"\b(blocker|blocked|blocking|failing|fails|failed|broken|red)\b", re.IGNORECASE
)


T = TypeVar("T", bound=tuple[Any, ...])


class _Read(Protocol):
    """What this module needs of a session being read (brief.py's ``_Session``)."""

    @property
    def project(self) -> str: ...

    @property
    def stamp(self) -> str: ...


S = TypeVar("S", bound=_Read)


def every_session_of(found: Sequence[S], sessions: Sequence[S]) -> list[S]:
    """All sessions of the projects ``found`` belongs to, newest first."""
    projects = {s.project for s in found}
    return sorted(
        (s for s in sessions if s.project in projects), key=lambda s: s.stamp, reverse=True
    )


def is_current_trouble(entry: Entry) -> bool:
    """A blocker or failing test recorded in a session's active state."""
    return entry.section == SECTION_ACTIVE and bool(_CURRENT_TROUBLE.search(entry.text))


def settles(open_terms: set[str], decision_terms: set[str]) -> bool:
    """Does a later decision answer this open question (by sharing enough of its words)?"""
    shared = len(open_terms & decision_terms)
    return shared >= SETTLED_MIN_SHARED and shared >= SETTLED_SHARE * len(open_terms)


def one_per_session_first(
    ranked: list[T], leads: Callable[[T], bool], relevant: Callable[[T], bool]
) -> list[T]:
    """``ranked`` (best first, each item ending with its session) reordered for coverage.

    Items that must lead stay first; then the best item of every relevant
    session; then the rest in rank order. The budget trims from the end, so a
    relevant session is cited before any session gets a second line.
    """
    first = [item for item in ranked if leads(item)]
    cited = {id(item[-1]) for item in first}
    for item in ranked:
        if not leads(item) and relevant(item) and id(item[-1]) not in cited:
            cited.add(id(item[-1]))
            first.append(item)
    taken = {id(item) for item in first}
    return first + [item for item in ranked if id(item) not in taken]
