"""Split a session file's Markdown body into its four sections, keeping line numbers.

Briefs cite findings as "lines a-b" of the session file, so every entry keeps
the 1-based line numbers it occupies in the *file* (frontmatter included), not
in the body. Parsing is forgiving: unknown headings are ignored, a missing
section is simply empty, and wrapped bullet lines are joined back to one entry.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

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
"""Lower-cased ``## `` heading text -> section key."""

_BULLET = re.compile(r"^[-*][ \t]+(.*)$")
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
    """The text of a ``## Heading ##`` line (closing hashes dropped), or None for other lines.

    Plain string operations, not a regex: the old pattern's lazy text and its
    three optional trailing runs tried every split of a run of spaces, cubic
    in the length of a line like ``## a``, ten thousand spaces, ``b``.
    """
    if not line.startswith("##") or line[2:3] not in (" ", "\t") or len(line) < 4:
        return None
    return line[2:].rstrip(" \t").rstrip("#").strip(" \t")


def body_start_line(lines: list[str]) -> int:
    """Index (0-based) of the first body line: just after the closing ``---``."""
    if not lines or lines[0].rstrip() != "---":
        return 0
    for index in range(1, len(lines)):
        if lines[index].rstrip() == "---":
            return index + 1
    return len(lines)


def parse_sections(text: str) -> SessionSections:
    """Parse the full text of a session file (frontmatter is skipped, not required)."""
    lines = text.replace("\r\n", "\n").split("\n")
    if lines and lines[0].startswith("\ufeff"):
        lines[0] = lines[0][1:]
    found: dict[str, list[Entry]] = {key: [] for key in HEADINGS.values()}
    section: str | None = None
    block: list[tuple[int, str]] = []  # (line number, raw line) of the current entry

    def flush() -> None:
        if section is not None and block:
            found[section].append(_entry(section, block))
        block.clear()

    for index in range(body_start_line(lines), len(lines)):
        line = lines[index]
        number = index + 1
        heading = heading_text(line)
        if heading is not None:
            flush()
            section = HEADINGS.get(heading.strip().lower())
            continue
        if section is None:
            continue
        if not line.strip():
            flush()
        elif _BULLET.match(line):
            flush()
            block.append((number, line))
        else:
            block.append((number, line))
    flush()
    return SessionSections(
        summary=tuple(found[SECTION_SUMMARY]),
        steps=tuple(found[SECTION_STEPS]),
        active_state=tuple(found[SECTION_ACTIVE]),
        key_decisions=tuple(found[SECTION_DECISIONS]),
    )


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
