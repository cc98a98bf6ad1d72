"""The rankers' view of one memory file (:class:`Candidate`), built from the index or a folder."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from memoryd.indexer.parse import parse_file
from memoryd.indexer.records import INDEX_FILENAME, KIND_MEMORY
from memoryd.select.analysis import TYPE_PREFIXES, DocTerms, analyse, with_hook
from memoryd.select.folder_links import index_hooks


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
    """Its analysis (:func:`analysis_of`), when worked out in advance."""
    commands: tuple[str, ...] | None = field(default=None, compare=False, repr=False)
    """The body's command lines (their programs), when ``body`` is not kept."""
    header: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """Header facts beyond name, description and type (``status``, dates, ...)."""
    hook: str = ""
    """The folder's ``MEMORY.md`` line for this file (title and hook)."""


def load_directory(directory: Path) -> list[Candidate]:
    """Every memory file of ``directory`` (not MEMORY.md, sessions or broken files), by name."""
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
                type=effective_type(parsed.type, path.name),
                body=parsed.body,
                mtime=st.st_mtime,
                header=parsed.meta.get("header", {}),
            )
        )
    index = directory / INDEX_FILENAME
    hooks: dict[str, str] = {}
    if index.is_file():
        hooks = index_hooks(index.read_text(encoding="utf-8", errors="replace"), out)
    out = [replace(c, hook=hooks.get(c.filename, "")) for c in out]
    return [replace(c, terms=analysis_of(c)) for c in out]


def analysis_of(c: Candidate, body: bool = True) -> DocTerms:
    """``c``'s analysis with its ``MEMORY.md`` line: the one it carries, else worked out now
    (without the body unless ``body``)."""
    if c.terms is not None:
        return c.terms
    doc = analyse(c.filename, c.name, c.description, c.body if body else "")
    return with_hook(doc, c.hook)


def effective_type(declared: str | None, filename: str) -> str | None:
    """The header's type, else the one the filename's prefix names (``reference_x.md``)."""
    if declared:
        return declared
    head = filename.partition("_")[0]
    return head if head in TYPE_PREFIXES and "_" in filename else None
