"""The ``list`` reply's entries, and the memories too big for the hook.

The hook shows only the head of each memory. A large memory is indexed and
selectable like any other, but the rest of it is invisible unless the agent
reads the file: ``list`` and the compaction report flag such memories as
candidates to condense or split. The cap is the hook's own (``_delivery.MAX_FILE_BYTES``,
``MAX_FILE_LINES``), so the flag moves with it. Sizes come from the index:
the file's bytes, and the lines of its body (the frontmatter's few lines are
not counted).
"""

from __future__ import annotations

from memoryd._delivery import MAX_FILE_BYTES, MAX_FILE_LINES
from memoryd.indexer.queries import IndexedFile, iso_utc
from memoryd.indexer.records import KIND_MEMORY
from memoryd.replies import FileSummary, ListReply, ParseFailure, Size
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


def listing(
    files: list[IndexedFile], directory: str, superseded: dict[str, str | None]
) -> ListReply:
    """``list``'s reply: the files that parsed, oversized and superseded ones marked, and
    the files that did not parse.

    ``superseded`` maps the path of each stale memory to its successor's filename
    (None when it names none).
    """
    summaries = []
    for f in files:
        if f.error is not None:
            continue
        entry: FileSummary = {
            "filename": f.filename,
            "path": f.path,
            "kind": f.kind,
            "name": f.name,
            "description": f.description,
            "type": f.type,
            "mtime": iso_utc(f.mtime),
            "size": f.size,
        }
        if f.warning:
            entry["warning"] = f.warning
        if f.secrets:
            entry["secret_lines"] = [s["line"] for s in f.secrets]
        if f.path in superseded:
            entry["superseded_by"] = superseded[f.path]
        size = oversize(f)
        if size is not None:
            entry["oversized"] = size
        summaries.append(entry)
    errors: list[ParseFailure] = [
        {"path": f.path, "error": f.error} for f in files if f.error is not None
    ]
    return {"dir": directory, "files": summaries, "errors": errors}
