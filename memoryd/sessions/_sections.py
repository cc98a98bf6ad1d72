"""A session file read back: its four body sections, its time, its resume line.

Each entry keeps the 1-based lines it occupies in the file, which briefs cite. Unknown
headings are ignored, a missing section is empty, wrapped bullet lines join one entry.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from memoryd.paths import SESSION_STAMP_FORMAT

SECTION_SUMMARY = "summary"
SECTION_STEPS = "steps"
SECTION_ACTIVE = "active_state"
SECTION_DECISIONS = "key_decisions"

HEADINGS = {
    "session summary": SECTION_SUMMARY,
    "steps completed": SECTION_STEPS,
    "active state": SECTION_ACTIVE,
    "key decisions": SECTION_DECISIONS,
}
_ORDER = (SECTION_SUMMARY, SECTION_STEPS, SECTION_ACTIVE, SECTION_DECISIONS)

_BULLET = re.compile(r"^[-*][ \t]+(.*)$")
STAMP = re.compile(r"\d{4}-\d{2}-\d{2}-\d{2}-\d{2}")
"""A session's stamp, ``YYYY-MM-DD-HH-MM``."""
_STEP = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*):[ \t]*(.*)$")


@dataclass(frozen=True, slots=True)
class Entry:
    """One bullet (or one paragraph, outside bullet lists) of a section."""

    section: str
    text: str
    first_line: int
    last_line: int
    label: str | None = None  # the step id ("S1") for steps


@dataclass(frozen=True, slots=True)
class SessionDoc:
    """A session file as found on disk, for a brief."""

    path: str
    filename: str
    project: str
    session: str  # YYYY-MM-DD-HH-MM, from the filename
    text: str | None  # full file text; None when unreadable
    error: str | None  # read/parse error: the file is skipped and counted in the scope


@dataclass(frozen=True, slots=True)
class SessionSections:
    """The body of a session file, entry by entry, with file line numbers."""

    summary: tuple[Entry, ...]
    steps: tuple[Entry, ...]
    active_state: tuple[Entry, ...]
    key_decisions: tuple[Entry, ...]

    @property
    def summary_text(self) -> str:
        return " ".join(entry.text for entry in self.summary)

    def entries(self, limit: int | None = None) -> Iterator[Entry]:
        """Every entry (the first ``limit`` of each section), in file order section by section."""
        for section in (self.summary, self.steps, self.active_state, self.key_decisions):
            yield from section[:limit]


def heading_text(line: str) -> str | None:
    """The text of a ``## Heading ##`` line (closing hashes dropped), or None (linear time)."""
    if not line.startswith("##") or line[2:3] not in (" ", "\t") or len(line) < 4:
        return None
    return line[2:].rstrip(" \t").rstrip("#").strip(" \t")


def _body_start(lines: list[str]) -> int:
    """Index of the first line after the frontmatter's closing ``---``."""
    if not lines or lines[0].rstrip() != "---":
        return 0
    return next((i + 1 for i in range(1, len(lines)) if lines[i].rstrip() == "---"), len(lines))


def parse_sections(text: str) -> SessionSections:
    """Parse the full text of a session file (frontmatter is skipped, not required)."""
    lines = text.replace("\r\n", "\n").split("\n")
    if lines and lines[0].startswith("\ufeff"):
        lines[0] = lines[0][1:]
    found: dict[str, list[Entry]] = {key: [] for key in _ORDER}
    section: str | None = None
    block: list[tuple[int, str]] = []  # (line number, raw line) of the current entry

    def flush() -> None:
        if section is not None and block:
            found[section].append(_entry(section, block))
        block.clear()

    for index in range(_body_start(lines), len(lines)):
        line = lines[index]
        number = index + 1
        heading = heading_text(line)
        if heading is not None:
            flush()
            section = HEADINGS.get(heading.strip().lower())
            continue
        if section is None:
            continue
        if not line.strip() or _BULLET.match(line):
            flush()
        if line.strip():
            block.append((number, line))
    flush()
    return SessionSections(*(tuple(found[key]) for key in _ORDER))


def _entry(section: str, block: list[tuple[int, str]]) -> Entry:
    first, head = block[0]
    bullet = _BULLET.match(head)
    parts = [bullet.group(1) if bullet else head.strip()]
    parts.extend(line.strip() for _, line in block[1:])
    text = " ".join(part for part in parts if part)
    label = None
    if section == SECTION_STEPS and bullet:
        step = _STEP.match(text)
        if step:
            label, text = step.group(1), step.group(2)
    return Entry(section=section, text=text, first_line=first, last_line=block[-1][0], label=label)


def session_started(session: str) -> dt.datetime:
    """The session timestamp as an aware datetime in local time."""
    return dt.datetime.strptime(session, SESSION_STAMP_FORMAT).astimezone()


def last_session_time(
    meta: Mapping[str, object], filename: str | None = None
) -> dt.datetime | None:
    """When the session started: ``last_session_at``, else the filename or ``session``."""
    raw = meta.get("last_session_at")
    if isinstance(raw, str):
        try:
            when = dt.datetime.fromisoformat(raw)
            return when if when.tzinfo else when.astimezone()
        except (ValueError, OverflowError):  # not a time, or one local time cannot show
            pass
    for candidate in (filename or "", str(meta.get("session", ""))):
        match = STAMP.match(candidate)
        if match:
            try:
                return session_started(match.group(0))
            except (ValueError, OverflowError):
                continue
    return None


def resume_line(
    project: str, meta: Mapping[str, object], now: dt.datetime, *, filename: str | None = None
) -> tuple[str, float]:
    """``Resuming `shop-backend` (last touched 3 days ago, status: in-progress at CP-S2)``,
    and the hours since the session started (NaN when no time is known)."""
    when = last_session_time(meta, filename)
    current = now if now.tzinfo else now.astimezone()
    hours = (current - when).total_seconds() / 3600 if when else float("nan")
    details = [f"last touched {_ago(hours)}"] if when else ["last touched at an unknown time"]
    status = meta.get("status")
    checkpoint = meta.get("last-checkpoint")
    if status and checkpoint:
        details.append(f"status: {status} at {checkpoint}")
    elif status or checkpoint:
        details.append(f"status: {status}" if status else f"at {checkpoint}")
    return f"Resuming `{project}` ({', '.join(details)})", hours


def _ago(hours: float) -> str:
    if hours < 0:
        return "in the future (clock skew?)"
    if hours < 1:
        minutes = int(hours * 60)
        return "just now" if minutes < 1 else f"{count_of(minutes, 'minute')} ago"
    if hours < 48:
        return f"{count_of(int(hours), 'hour')} ago"
    days = int(hours // 24)
    return f"{count_of(days, 'day') if days < 60 else count_of(days // 30, 'month')} ago"


def count_of(number: int, noun: str) -> str:
    """``1 day``, ``3 days``."""
    return f"{number} {noun}{'' if number == 1 else 's'}"
