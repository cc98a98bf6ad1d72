"""Memories too big for the hook: it shows only the first 4 KB / 200 lines of each.

A 5 MB memory is indexed and selectable like any other, but what reaches the
agent is its head; the rest is invisible unless the agent reads the file.
``list`` and the compaction report flag such memories as candidates to
condense or split. The cap is the hook's own (``_delivery.MAX_FILE_BYTES``,
``MAX_FILE_LINES``), so the flag moves with it. Sizes come from the index:
the file's bytes, and the lines of its body (the frontmatter's few lines are
not counted).
"""

from __future__ import annotations

from memoryd._delivery import MAX_FILE_BYTES, MAX_FILE_LINES
from memoryd.indexer.queries import IndexedFile
from memoryd.indexer.records import KIND_MEMORY
from memoryd.replies import ListReply, Size
from memoryd.report.document import Oversized

CAP = {"bytes": MAX_FILE_BYTES, "lines": MAX_FILE_LINES}
"""What the hook shows of one memory at most."""


def oversize(f: IndexedFile) -> Size | None:
    """``{"bytes", "lines"}`` of a memory over the hook's cap; None for one within it."""
    if f.kind != KIND_MEMORY or f.error is not None:
        return None
    lines = f.body.count("\n") + 1 if f.body else 0
    if f.size <= MAX_FILE_BYTES and lines <= MAX_FILE_LINES:
        return None
    return {"bytes": f.size, "lines": lines}


def oversized(files: list[IndexedFile]) -> list[Oversized]:
    """The report's list: every oversized memory with its size."""
    return [{"file": f.filename, **size} for f in files if (size := oversize(f)) is not None]


def mark_listing(listing: ListReply, files: list[IndexedFile]) -> ListReply:
    """``list``'s entries for oversized memories get ``oversized: {bytes, lines}``."""
    sizes = {f.path: size for f in files if (size := oversize(f)) is not None}
    for entry in listing["files"]:
        if entry["path"] in sizes:
            entry["oversized"] = sizes[entry["path"]]
    return listing
