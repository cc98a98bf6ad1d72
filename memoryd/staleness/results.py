"""Reads and writes of the staleness tables: citations, verdicts, hook hints.

A memory's last verdict is stored with the content hash and HEAD it was computed for; one
whose hash no longer matches the file is not shown.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from memoryd.check_replies import Verdict
from memoryd.indexer.citations import Citation
from memoryd.indexer.queries import under, under_args
from memoryd.replies import ListReply


class StaleMemory(TypedDict):
    """A stale memory as the report lists it."""

    filename: str
    path: str
    staleness: Verdict


@dataclass(frozen=True)
class CitingMemory:
    """A memory with citations, as the checker needs it."""

    path: str
    filename: str
    content_hash: str
    mtime: float
    citations: list[Citation]


def citing_memories(conn: sqlite3.Connection, directory: str) -> list[CitingMemory]:
    """The parsed memories of ``directory`` that cite anything, by filename."""
    rows = conn.execute(
        "SELECT f.path, f.filename, f.content_hash, f.mtime_ns, c.target, c.kind, c.line "
        "FROM files f JOIN citations c ON c.path = f.path "
        "WHERE f.directory = ? AND f.kind = 'memory' AND f.error IS NULL "
        "ORDER BY f.filename, c.rowid",
        (directory,),
    )
    out: dict[str, CitingMemory] = {}
    for path, filename, digest, mtime_ns, target, kind, line in rows:
        memory = out.get(path)
        if memory is None:
            memory = out[path] = CitingMemory(path, filename, digest or "", mtime_ns / 1e9, [])
        memory.citations.append(Citation(target, kind, line))
    return list(out.values())


def checked_keys(conn: sqlite3.Connection, paths: Sequence[str]) -> dict[str, tuple[str, str]]:
    """``path -> (content_hash, head)`` of the stored verdicts for ``paths``."""
    sql = "SELECT path, content_hash, head FROM staleness WHERE path IN ({marks})"
    return {path: (digest, head) for path, digest, head in _rows_for(conn, sql, paths)}


def save_verdicts(
    conn: sqlite3.Connection, verdicts: Sequence[tuple[str, str, str, Verdict]]
) -> None:
    """Store ``(path, content_hash, head_key, verdict)`` rows (caller holds the transaction)."""
    now = time.time()
    conn.executemany(
        "INSERT OR REPLACE INTO staleness(path, content_hash, head, checkout, all_gone, "
        "stale, verdict_json, checked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                path,
                digest,
                head,
                v["checkout"],
                int(v["all_gone"]),
                int(v["stale"]),
                json.dumps(v, sort_keys=True),
                now,
            )
            for path, digest, head, v in verdicts
        ],
    )


def drop_verdicts(conn: sqlite3.Connection, paths: Sequence[str]) -> None:
    """Forget verdicts that no longer apply (citations gone, or no checkout any more)."""
    conn.executemany("DELETE FROM staleness WHERE path = ?", [(p,) for p in paths])


def verdicts_for(conn: sqlite3.Connection, paths: Sequence[str]) -> dict[str, Verdict]:
    """Current verdicts by path: only those computed for the file's present content."""
    sql = (
        "SELECT s.path, s.verdict_json FROM staleness s JOIN files f ON f.path = s.path "
        "AND f.content_hash = s.content_hash WHERE s.path IN ({marks})"
    )
    return {path: json.loads(text) for path, text in _rows_for(conn, sql, paths)}


def stale_under(conn: sqlite3.Connection, directory: str) -> dict[str, list[StaleMemory]]:
    """Stale memories in or below ``directory``, grouped by folder (for the report)."""
    rows = conn.execute(
        "SELECT f.directory, f.filename, f.path, s.verdict_json FROM staleness s "
        "JOIN files f ON f.path = s.path AND f.content_hash = s.content_hash "
        f"WHERE s.stale = 1 AND {under('f.directory')} ORDER BY f.directory, f.filename",
        under_args(directory),
    )
    out: dict[str, list[StaleMemory]] = {}
    for folder, filename, path, text in rows:
        out.setdefault(folder, []).append(
            {"filename": filename, "path": path, "staleness": json.loads(text)}
        )
    return out


def remember_cwd(conn: sqlite3.Connection, directory: str, cwd: str) -> None:
    """Record the working directory the hook reported for ``directory`` (caller commits)."""
    conn.execute(
        "INSERT OR REPLACE INTO checkout_hints(directory, cwd, seen_at) VALUES (?, ?, ?)",
        (directory, cwd, time.time()),
    )


def _rows_for(conn: sqlite3.Connection, sql: str, paths: Sequence[str]) -> Iterator[Any]:
    """The rows of ``sql`` whose ``IN ({marks})`` is ``paths``, asked 500 at a time."""
    items = list(paths)
    for start in range(0, len(items), 500):
        chunk = items[start : start + 500]
        yield from conn.execute(sql.format(marks=",".join("?" * len(chunk))), chunk)


def annotate_listing(conn: sqlite3.Connection, listing: ListReply) -> ListReply:
    """Add each file's current verdict (or None) to a ``list`` answer, in place."""
    verdicts = verdicts_for(conn, [f["path"] for f in listing["files"]])
    for f in listing["files"]:
        f["staleness"] = verdicts.get(f["path"])
    return listing


def intact_first(
    picks: Sequence[tuple[str, float | None]],
    verdict_of: Callable[[str], Verdict | None],
) -> list[tuple[str, float | None]]:
    """Ranked ``(filename, score)`` picks, those whose every cited path is gone moved last
    (stable)."""
    return sorted(picks, key=lambda pick: bool((v := verdict_of(pick[0])) and v.get("all_gone")))
