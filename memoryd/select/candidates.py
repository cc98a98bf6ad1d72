"""The rankers' view of one memory file (:class:`Candidate`), and its ``MEMORY.md`` line.

A reference in ``MEMORY.md`` is a filename (with or without ``.md`` or a
directory), the filename without its type prefix, or the memory's ``name``;
case, spaces, ``-`` and ``_`` aside.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memoryd.select.analysis import TYPE_PREFIXES, DocTerms, analyse, with_hook


@dataclass(frozen=True, slots=True)
class Candidate:
    """One usable memory file as seen by the rankers."""

    filename: str
    name: str
    description: str
    type: str | None
    body: str
    mtime: float
    terms: DocTerms | None = field(default=None, compare=False, repr=False)  # its analysis
    commands: tuple[str, ...] | None = field(default=None, compare=False, repr=False)
    header: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    hook: str = ""  # its MEMORY.md line


def analysis_of(c: Candidate, body: bool = True) -> DocTerms:
    """``c``'s analysis with its hook: the one it carries, else worked out now."""
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


_INDEX_LINE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?P<entry>.+)$")
_MD_LINK = re.compile(r"\[(?P<title>[^\]\n]{0,300})\]\(\s*<?(?P<target>[^()<>\s]{1,500})>?\s*\)")
_WIKI_LINK = re.compile(r"\[\[(?P<target>[^\[\]|#\n]{1,200})(?:[#|][^\[\]\n]{0,200})?\]\]")
_BARE_FILE = re.compile(r"`?(?P<target>[\w./-]{1,300}\.md)`?")
_HOOK_LEAD = re.compile(r"^\s*(?:[—–:-]+|\s)+")
_SLUG_SEPARATORS = re.compile(r"[\s_\-]+")


def _slug(text: str) -> str:
    return _SLUG_SEPARATORS.sub("-", text.strip().lower()).strip("-")


def _target_key(target: str) -> str:
    """A reference reduced to what can be compared: last path part, no ``.md``, as a slug."""
    base = target.strip().rsplit("/", 1)[-1]
    return _slug(base[:-3] if base.lower().endswith(".md") else base)


def index_hooks(index_text: str, candidates: Sequence[Candidate]) -> dict[str, str]:
    """Filename -> the text of the first ``MEMORY.md`` line naming it, for existing files."""
    keys: dict[str, str] = {}
    # Weakest first, so a filename beats a name that happens to equal another's filename.
    for c in candidates:
        if c.name:
            keys.setdefault(_slug(c.name), c.filename)
    for c in candidates:
        head, _, rest = c.filename.removesuffix(".md").partition("_")
        if head in TYPE_PREFIXES and rest:
            keys[_slug(rest)] = c.filename
    for c in candidates:
        keys[_target_key(c.filename)] = c.filename
    hooks: dict[str, str] = {}
    for line in index_text.splitlines():
        m = _INDEX_LINE.match(line)
        if m is None:
            continue
        entry = m.group("entry")
        link = _MD_LINK.search(entry) or _WIKI_LINK.search(entry) or _BARE_FILE.search(entry)
        if link is None:
            continue
        key = _target_key(link.group("target"))
        filename = keys.get(key) if key else None
        if filename is None or filename in hooks:
            continue
        title = link.groupdict().get("title") or ""
        rest = _HOOK_LEAD.sub("", entry[: link.start()] + " " + entry[link.end() :]).strip()
        text = " ".join(part for part in (title, rest) if part)
        if text:
            hooks[filename] = text
    return hooks
