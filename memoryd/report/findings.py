"""Per-file findings read from the index: broken files, duplicates, secrets, usage.

Everything here works from rows the indexer already stored (parse errors,
secret flags, bodies, selector telemetry), so a report re-reads no memory
file. Secrets are reported by line number and kind only; the index never kept
their values.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter, defaultdict

from memoryd.indexer.queries import IndexedFile
from memoryd.indexer.records import KIND_MEMORY
from memoryd.report.document import (
    BrokenFile,
    DuplicateGroup,
    Report,
    SecretFile,
    Selected,
    SupersededMemory,
    Usage,
)
from memoryd.select.candidates import Candidate
from memoryd.select.relations import compute_relations

MIN_BODY_CHARS = 40
"""Bodies shorter than this ("TODO", one link) are too generic to call duplicates."""


def broken_files(files: list[IndexedFile]) -> list[BrokenFile]:
    """Every file the indexer could not use, with its reason."""
    return [{"file": f.filename, "reason": f.error} for f in files if f.error is not None]


def secret_files(files: list[IndexedFile]) -> list[SecretFile]:
    """Files flagged at index time, with the line and kind of each suspect line."""
    return [
        {"file": f.filename, "lines": [{"line": s["line"], "kind": s["kind"]} for s in f.secrets]}
        for f in files
        if f.secrets
    ]


def _normal(text: str) -> str:
    return " ".join(text.lower().split())


def _exact_groups(memories: list[IndexedFile], field: str, min_chars: int) -> list[list[str]]:
    groups: dict[str, list[str]] = defaultdict(list)
    for f in memories:
        key = _normal(getattr(f, field) or "")
        if len(key) >= min_chars:
            groups[key].append(f.filename)
    return [names for names in groups.values() if len(names) > 1]


def duplicates(
    files: list[IndexedFile],
) -> tuple[list[DuplicateGroup], list[SupersededMemory]]:
    """``(duplicate groups, superseded memories)`` among one directory's memories.

    Groups are identical descriptions, identical bodies (ignoring case and
    spacing), then near-identical pairs as the selector's relations see them,
    minus pairs already in an identical group. A memory that a newer one says
    it supersedes is listed apart: it is stale rather than duplicated.
    """
    memories = [f for f in files if f.kind == KIND_MEMORY and f.error is None]
    found: list[DuplicateGroup] = []
    seen: set[frozenset[str]] = set()
    for field, min_chars in (("description", 1), ("body", MIN_BODY_CHARS)):
        for names in _exact_groups(memories, field, min_chars):
            found.append({"match": f"identical {field}", "files": names})
            seen.update(frozenset((a, b)) for a in names for b in names if a != b)
    candidates = [
        Candidate(
            filename=f.filename,
            name=f.name or f.filename.removesuffix(".md"),
            description=f.description or "",
            type=f.type,
            body=f.body,
            mtime=f.mtime,
        )
        for f in memories
    ]
    relations = compute_relations(candidates)
    for a, b in relations.near_duplicates:
        if frozenset((a, b)) not in seen:
            found.append({"match": "near-identical description", "files": [a, b]})
    superseded: list[SupersededMemory] = [
        {"file": old, "superseded_by": new} for old, new in sorted(relations.superseded.items())
    ]
    return found, superseded


def usage_by_dir(
    conn: sqlite3.Connection, manifests: dict[str, list[str]], since: float, top: int = 10
) -> dict[str, Usage]:
    """Selection counts per directory since ``since``, for directories that had runs.

    A directory no selector run asked about is left out: "never selected"
    would only mean "never asked".
    """
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
            "most_selected": most[:top],
            "never_selected": sorted(set(names) - set(counts)),
        }
    return out


def dumps(report: Report) -> str:
    """The JSON form of a report (stable key order, readable in a diff)."""
    return json.dumps(report, ensure_ascii=False, indent=2) + "\n"
