"""MEMORY.md health: size, dead links, unlisted memories, entries without a hook.

Agents load MEMORY.md at the start of a session and silently cut it off past
about 200 lines or 25 KB, so whatever sits below that line is invisible to
them. A link to a file that is gone wastes a line; a memory that is not listed
is never seen by an agent that reads only the index; an entry with no hook
(``- [Title](file.md) — hook``) gives the agent nothing to decide on.
"""

from __future__ import annotations

import os
import re
from urllib.parse import unquote

from memoryd.indexer.citations import MARKDOWN_LINK
from memoryd.indexer.queries import IndexedFile
from memoryd.indexer.records import KIND_INDEX, KIND_MEMORY
from memoryd.report.document import IndexHealth, LinkLine

MAX_LINES = 200
MAX_BYTES = 25 * 1024

_ENTRY = re.compile(r"^\s*[-*+]\s+\[[^\]]*\]\(([^)]*)\)(?P<rest>.*)$")
_HOOK_PUNCTUATION = " \t—–-:|"


def _local_target(raw: str) -> str | None:
    """The file a link points at, or None for URLs and in-page anchors."""
    if "://" in raw or raw.startswith(("mailto:", "#")):
        return None
    target = unquote(raw.split("#", 1)[0].split("?", 1)[0])
    return target or None


def index_health(directory: str, files: list[IndexedFile]) -> IndexHealth | None:
    """Findings for the MEMORY.md of ``directory`` (``files`` are the directory's own).

    None when the directory holds no memory files at all (a sessions folder,
    say); ``{"missing": True}`` when it holds memories but no index.
    """
    index = next((f for f in files if f.kind == KIND_INDEX and f.error is None), None)
    memories = [f for f in files if f.kind == KIND_MEMORY]
    if index is None:
        return {"missing": True, "path": os.path.join(directory, "MEMORY.md")} if memories else None
    text = index.body
    lines = text.splitlines()
    listed: set[str] = set()
    dead: list[LinkLine] = []
    no_hook: list[LinkLine] = []
    for number, line in enumerate(lines, start=1):
        for match in MARKDOWN_LINK.finditer(line):
            target = _local_target(match.group(1))
            if target is None:
                continue
            resolved = os.path.normpath(os.path.join(directory, target))
            listed.add(resolved)
            if not os.path.exists(resolved):
                dead.append({"line": number, "target": target})
        entry = _ENTRY.match(line)
        if entry and not entry.group("rest").strip(_HOOK_PUNCTUATION):
            no_hook.append({"line": number, "target": entry.group(1).strip()})
    oversize = len(lines) > MAX_LINES or index.size > MAX_BYTES
    return {
        "missing": False,
        "path": index.path,
        "lines": len(lines),
        "bytes": index.size,
        "oversize": oversize,
        "dead_links": dead,
        "unlisted": [f.filename for f in memories if f.path not in listed],
        "no_hook": no_hook,
    }


def issue_count(health: IndexHealth | None) -> int:
    """How many separate problems one directory's MEMORY.md has."""
    if health is None:
        return 0
    if health["missing"]:
        return 1
    return (
        int(health["oversize"])
        + len(health["dead_links"])
        + len(health["unlisted"])
        + len(health["no_hook"])
    )
