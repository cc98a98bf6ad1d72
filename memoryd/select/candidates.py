"""The ranker's view of one memory file, and a loader that builds it from a directory.

Rankers only need the header fields, the body and an mtime; keeping that in a
small frozen record (instead of passing ``ParsedFile`` around) lets the
selector build candidates from the index store and the bench build them
straight from disk with the same type.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from memoryd.indexer.parse import parse_file
from memoryd.indexer.records import INDEX_FILENAME, KIND_MEMORY
from memoryd.select.analysis import DocTerms


@dataclass(frozen=True, slots=True)
class Candidate:
    """One usable memory file as seen by the rankers."""

    filename: str
    name: str
    description: str
    type: str | None
    body: str
    mtime: float
    terms: DocTerms | None = field(default=None, compare=False, repr=False)
    """The analysis stored at index time; rankers work it out when it is absent."""
    commands: tuple[str, ...] | None = field(default=None, compare=False, repr=False)
    """The body's command lines (their program names), when ``body`` is not kept: a
    cached manifest ranks from posting lists and needs nothing else of the body."""


def load_directory(directory: Path) -> list[Candidate]:
    """Parse every memory file in ``directory``, skipping MEMORY.md, sessions and broken files.

    Sorted by filename so that everything downstream is deterministic.
    """
    out: list[Candidate] = []
    for path in sorted(directory.glob("*.md")):
        if path.name == INDEX_FILENAME or not path.is_file():
            continue
        st = os.stat(path)
        parsed = parse_file(str(path), path.name, st.st_size)
        if parsed.error is not None or parsed.kind != KIND_MEMORY:
            continue
        out.append(
            Candidate(
                filename=path.name,
                name=parsed.name or path.stem,
                description=parsed.description or "",
                type=parsed.type,
                body=parsed.body,
                mtime=st.st_mtime,
            )
        )
    return out
