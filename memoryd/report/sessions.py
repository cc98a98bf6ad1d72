"""Session findings: old sessions worth condensing, and work left hanging.

A session's age is the time the session itself records (``last_session_at``,
else the timestamp in its filename), not the file's mtime: memory folders are
copied, synced and checked out, and each of those resets mtimes without
anyone having touched the work.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from memoryd.indexer.queries import IndexedFile, iso_utc
from memoryd.indexer.records import KIND_SESSION
from memoryd.report.document import OldSessions, StaleWork, SupersededSession
from memoryd.sessions._sections import last_session_time

OPEN_STATUSES = ("in-progress", "paused")
DAY = 86400.0


@dataclass(frozen=True, slots=True)
class Session:
    """A parsed session memory with the time it records."""

    file: IndexedFile
    at: float

    @property
    def project(self) -> str:
        return self.file.project or self.file.name or ""


def sessions_of(files: Iterable[IndexedFile]) -> list[Session]:
    """The parsed session memories among ``files``, oldest first."""
    out = []
    for f in files:
        if f.kind != KIND_SESSION or f.error is not None:
            continue
        when = last_session_time(f.meta, f.filename)
        at = when.timestamp() if isinstance(when, dt.datetime) else f.mtime
        out.append(Session(f, at))
    return sorted(out, key=lambda s: (s.at, s.file.filename))


def _by_project(sessions: list[Session]) -> dict[str, list[Session]]:
    grouped: dict[str, list[Session]] = defaultdict(list)
    for s in sessions:
        grouped[s.project].append(s)
    return dict(sorted(grouped.items()))


def old_sessions(sessions: list[Session], cutoff: float) -> list[OldSessions]:
    """Per project: the sessions recorded before ``cutoff``.

    An old session is a candidate to condense when the project has a later
    ``completed`` session: that one already carries the outcome, so the older
    ones could be folded into a single summary.
    """
    out: list[OldSessions] = []
    for project, group in _by_project(sessions).items():
        old = [s for s in group if s.at < cutoff]
        if not old:
            continue
        completed = [s for s in group if s.file.status == "completed"]
        latest_done = completed[-1] if completed else None
        superseded: list[SupersededSession] = [
            {"file": s.file.filename, "superseded_by": latest_done.file.filename}
            for s in old
            if latest_done is not None and s.at < latest_done.at
        ]
        out.append(
            {
                "project": project,
                "count": len(old),
                "bytes": sum(s.file.size for s in old),
                "first": iso_utc(old[0].at),
                "last": iso_utc(old[-1].at),
                "files": [s.file.filename for s in old],
                "superseded": superseded,
            }
        )
    return out


def stale_work(sessions: list[Session], cutoff: float, now: float) -> list[StaleWork]:
    """Projects whose newest session is still open and was last touched before ``cutoff``.

    Only the newest session of a project counts: an older ``in-progress``
    session followed by later ones is history, not work someone left behind.
    """
    out: list[StaleWork] = []
    for project, group in _by_project(sessions).items():
        latest = group[-1]
        if latest.file.status not in OPEN_STATUSES or latest.at >= cutoff:
            continue
        out.append(
            {
                "project": project,
                "file": latest.file.filename,
                "status": latest.file.status,
                "last_checkpoint": latest.file.meta.get("last-checkpoint"),
                "last_touched": iso_utc(latest.at),
                "age_days": round((now - latest.at) / DAY, 1),
            }
        )
    return out
