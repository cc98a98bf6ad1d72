"""The report's findings, each read from the index (no memory file is re-read).

Sessions are aged by the time they record, not by mtime. Agents cut MEMORY.md off past 200
lines or 25 KB. Secrets are reported by line and kind only.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import unquote

from memoryd._delivery import MAX_FILE_BYTES, MAX_FILE_LINES
from memoryd.file_entries import FileError
from memoryd.indexer.citations import MARKDOWN_LINK
from memoryd.indexer.queries import IndexedFile, iso_utc
from memoryd.indexer.records import KIND_INDEX, KIND_MEMORY, KIND_SESSION
from memoryd.replies import FileSummary, ListReply, Size
from memoryd.report.document import (
    DuplicateGroup,
    IndexHealth,
    LinkLine,
    OldSessions,
    Selected,
    StaleWork,
    SupersededMemory,
    Usage,
)
from memoryd.select.manifest import to_candidate
from memoryd.select.relations import compute_relations
from memoryd.sessions._sections import last_session_time

DAY = 86400.0
OPEN_STATUSES = ("in-progress", "paused")
MAX_LINES = 200
MAX_BYTES = 25 * 1024
"""Where agents cut MEMORY.md off."""
_ENTRY = re.compile(r"^\s*[-*+]\s+\[[^\]]*\]\(([^)]*)\)(?P<rest>.*)$")
_HOOK_PUNCTUATION = " \t—–-:|"

MIN_BODY_CHARS = 40
"""Bodies shorter than this ("TODO", one link) are too generic to call duplicates."""


def selectable(f: IndexedFile) -> bool:
    """A memory ``select`` can return (a broken one is reported as broken instead)."""
    return f.kind == KIND_MEMORY and f.error is None


def duplicates(
    files: list[IndexedFile],
) -> tuple[list[DuplicateGroup], list[SupersededMemory]]:
    """``(duplicate groups, superseded memories)`` among one directory's memories: identical
    descriptions, identical bodies, then the selector's near-identical pairs not yet grouped."""
    memories = [f for f in files if selectable(f)]
    found: list[DuplicateGroup] = []
    seen: set[frozenset[str]] = set()
    for field, min_chars in (("description", 1), ("body", MIN_BODY_CHARS)):
        groups: dict[str, list[str]] = defaultdict(list)
        for f in memories:
            key = " ".join((getattr(f, field) or "").lower().split())
            if len(key) >= min_chars:
                groups[key].append(f.filename)
        for names in (names for names in groups.values() if len(names) > 1):
            found.append({"match": f"identical {field}", "files": names})
            seen.update(frozenset((a, b)) for a in names for b in names if a != b)
    relations = compute_relations([to_candidate(f) for f in memories])
    for a, b in relations.near_duplicates:
        if frozenset((a, b)) not in seen:
            found.append({"match": "near-identical description", "files": [a, b]})
    superseded: list[SupersededMemory] = [
        {"file": old, "superseded_by": new} for old, new in sorted(relations.superseded.items())
    ]
    return found, superseded


def usage_by_dir(
    conn: sqlite3.Connection, manifests: dict[str, list[str]], since: float
) -> dict[str, Usage]:
    """Selection counts per directory since ``since``, for directories that had runs (else
    "never selected" would only mean "never asked")."""
    runs: Counter[str] = Counter()
    picked: dict[str, Counter[str]] = defaultdict(Counter)
    for directory, selected in conn.execute(
        "SELECT dir, selected_json FROM selector_runs WHERE at >= ?", (since,)
    ):
        runs[directory] += 1
        picked[directory].update(json.loads(selected or "[]"))
    out: dict[str, Usage] = {}
    for directory, names in manifests.items():
        if not runs[directory]:
            continue
        counts = picked[directory]
        most: list[Selected] = [
            {"file": name, "count": n} for name, n in counts.most_common() if name in names
        ]
        out[directory] = {
            "runs": runs[directory],
            "most_selected": most[:10],
            "never_selected": sorted(set(names) - set(counts)),
        }
    return out


def oversize(f: IndexedFile) -> Size | None:
    """``{"bytes", "lines"}`` of a memory over the hook's cap; None for one within it."""
    if not selectable(f):
        return None
    lines = f.body.count("\n") + 1 if f.body else 0
    if f.size <= MAX_FILE_BYTES and lines <= MAX_FILE_LINES:
        return None
    return {"bytes": f.size, "lines": lines}


def listing(
    files: list[IndexedFile], directory: str, superseded: dict[str, str | None]
) -> ListReply:
    """``list``'s reply: the files that parsed (oversized ones and those in ``superseded``, path
    -> successor, marked), and the files that did not."""
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
    errors: list[FileError] = [
        {"path": f.path, "error": f.error} for f in files if f.error is not None
    ]
    return {"dir": directory, "files": summaries, "errors": errors}


def index_health(directory: str, files: list[IndexedFile]) -> IndexHealth | None:
    """Findings for the MEMORY.md of ``directory`` (``files`` are its own): dead links, unlisted
    memories, entries with no hook; None for a folder without memories."""
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
            raw = match.group(1)  # URLs and in-page anchors are not files
            target = unquote(raw.split("#", 1)[0].split("?", 1)[0])
            if "://" in raw or raw.startswith(("mailto:", "#")) or not target:
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


@dataclass(frozen=True, slots=True)
class Session:
    """A parsed session memory with the time it records."""

    file: IndexedFile
    at: float


def sessions_by_project(files: Iterable[IndexedFile]) -> dict[str, list[Session]]:
    """The parsed session memories among ``files`` per project (by name), oldest first."""
    found = []
    for f in files:
        if f.kind == KIND_SESSION and f.error is None:
            when = last_session_time(f.meta, f.filename)
            found.append(Session(f, f.mtime if when is None else when.timestamp()))
    grouped: dict[str, list[Session]] = defaultdict(list)
    for session in sorted(found, key=lambda s: (s.at, s.file.filename)):
        grouped[session.file.project or session.file.name or ""].append(session)
    return dict(sorted(grouped.items()))


def old_sessions(by_project: dict[str, list[Session]], cutoff: float) -> list[OldSessions]:
    """Per project: the sessions recorded before ``cutoff``, those before a later ``completed``
    one (which carries the outcome) marked as candidates to condense."""
    out: list[OldSessions] = []
    for project, group in by_project.items():
        old = [s for s in group if s.at < cutoff]
        if not old:
            continue
        completed = [s for s in group if s.file.status == "completed"]
        latest_done = completed[-1] if completed else None
        superseded: list[SupersededMemory] = [
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


def stale_work(by_project: dict[str, list[Session]], cutoff: float, now: float) -> list[StaleWork]:
    """Projects whose newest session is still open and was last touched before ``cutoff``."""
    out: list[StaleWork] = []
    for project, group in by_project.items():
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
