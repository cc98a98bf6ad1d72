"""What a folder's ``MEMORY.md`` says of its memories: each file's line (title and hook), a
second description. A reference is a filename with or without ``.md`` or a directory, the
filename without its type prefix, or the memory's ``name``; case, spaces, ``-`` and ``_``
aside.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memoryd.select.analysis import TYPE_PREFIXES

if TYPE_CHECKING:  # candidates.py imports this module
    from memoryd.select.candidates import Candidate

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


class Resolver:
    """Finds the memory a reference means among a folder's candidates."""

    def __init__(self, candidates: Sequence[Candidate]) -> None:
        keys: dict[str, str] = {}
        # Weakest first, so a filename beats a name that happens to equal another's filename.
        for c in candidates:
            if c.name:
                keys.setdefault(_slug(c.name), c.filename)
        for c in candidates:
            stem = c.filename.removesuffix(".md")
            head, _, rest = stem.partition("_")
            if head in TYPE_PREFIXES and rest:
                keys[_slug(rest)] = c.filename
        for c in candidates:
            keys[_target_key(c.filename)] = c.filename
        self._keys = keys

    def find(self, reference: str) -> str | None:
        key = _target_key(reference)
        return self._keys.get(key) if key else None


def index_hooks(index_text: str, candidates: Sequence[Candidate]) -> dict[str, str]:
    """Filename -> the text of the first ``MEMORY.md`` line naming it, for existing files."""
    resolver = Resolver(candidates)
    hooks: dict[str, str] = {}
    for line in index_text.splitlines():
        m = _INDEX_LINE.match(line)
        if m is None:
            continue
        entry = m.group("entry")
        link = _MD_LINK.search(entry) or _WIKI_LINK.search(entry) or _BARE_FILE.search(entry)
        if link is None:
            continue
        filename = resolver.find(link.group("target"))
        if filename is None or filename in hooks:
            continue
        title = link.groupdict().get("title") or ""
        rest = _HOOK_LEAD.sub("", entry[: link.start()] + " " + entry[link.end() :]).strip()
        text = " ".join(part for part in (title, rest) if part)
        if text:
            hooks[filename] = text
    return hooks
