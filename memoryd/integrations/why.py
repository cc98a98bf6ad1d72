"""``memoryd why``: what memoryd gave a session's last prompts, why, and whether the agent used it.

From the index's ``selector_runs`` rows (read-only) and the session's transcript: each memory
chosen with its rank and score, its token cost, what each rule left out, and whether it was
delivered, ``Read`` or quoted in that turn. A row is matched to a turn by its prompt's hash;
with no match, use is unknown (None).
"""

from __future__ import annotations

import json
import math
import os
import re
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypedDict

from memoryd import paths
from memoryd._delivery import memory_block, memory_text
from memoryd.errors import InvalidParams
from memoryd.indexer.queries import iso_utc
from memoryd.integrations._transcript import Turn, transcript_of, turns
from memoryd.integrations.claude_code import MAX_QUERY_CHARS
from memoryd.select.telemetry import query_hash

BYTES_PER_TOKEN = 4
QUOTE_WORDS = 8
_WORD = re.compile(r"\w+")
_RULES = {
    "surfaced": "already shown",
    "tool_docs": "usage doc of a tool in use",
    "superseded": "superseded",
    "secrets": "holds a secret",
    "duplicates_of_surfaced": "near-duplicate of one shown",
}


class WhyReport(TypedDict):
    """The report, JSON for ``memoryd why --json`` and MCP's ``memory_why``."""

    session_id: str
    dir: str
    transcript: str | None
    prompts: list[dict[str, Any]]
    tokens_note: str


def explain(
    conn: sqlite3.Connection,
    directory: str,
    *,
    session: str | None = None,
    last: int = 5,
) -> WhyReport:
    """The report for the last ``last`` prompts of ``session`` (default: the folder's latest)."""
    if last < 1:
        raise InvalidParams("'last' must be at least 1", {"field": "last"})
    if not session:  # the newest recorded select's on the folder
        row = conn.execute(
            "SELECT session_id FROM selector_runs WHERE dir = ? AND session_id IS NOT NULL "
            "ORDER BY at DESC LIMIT 1",
            (directory,),
        ).fetchone()
        session = None if row is None else str(row[0])
    if session is None:
        raise InvalidParams(
            f"no select with a session is recorded for {directory}: the Claude Code hook "
            "records one per prompt (see `memoryd install-hook`)",
            {"field": "session"},
        )
    rows = conn.execute(
        "SELECT * FROM selector_runs WHERE session_id = ? ORDER BY at DESC LIMIT ?",
        (session, last),
    ).fetchall()
    transcript = transcript_of(session)
    matched = _match(rows, turns(transcript) if transcript else [])
    prompts = [_prompt(row, turn) for row, turn in zip(rows, matched, strict=True)]
    return {
        "session_id": session,
        "dir": directory,
        "transcript": None if transcript is None else str(transcript),
        "prompts": prompts[::-1],
        "tokens_note": f"tokens ~ UTF-8 bytes of the injected block / {BYTES_PER_TOKEN}",
    }


def _match(rows: list[sqlite3.Row], found: list[Turn]) -> list[Turn | None]:
    """For each row (newest first), the latest turn not yet taken whose prompt it was."""
    left = list(found)
    out: list[Turn | None] = []
    for row in rows:
        hit = next(
            (
                i
                for i in range(len(left) - 1, -1, -1)
                if query_hash(left[i].prompt[:MAX_QUERY_CHARS]) == row["query_hash"]
            ),
            None,
        )
        out.append(None if hit is None else left[hit])
        if hit is not None:
            del left[hit:]
    return out


# dict[str, Any]: one prompt of explain()'s JSON report.
def _prompt(row: sqlite3.Row, turn: Turn | None) -> dict[str, Any]:
    detail = json.loads(row["detail_json"] or "{}")
    names = json.loads(row["selected_json"] or "[]")
    scores = detail.get("scores") or [None] * len(names)
    left = dict(detail.get("left_out") or {})
    below = left.pop("below_cut", [])
    count = left.pop("below_cut_count", None)
    injected = [
        _memory(rank, name, score, row, turn)
        for rank, (name, score) in enumerate(zip(names, scores, strict=False), 1)
    ]
    return {
        "at": iso_utc(row["at"]),
        "run_id": row["run_id"],
        "query": row["query"],
        "query_hash": row["query_hash"],
        "query_len": row["query_len"],
        "ranker": row["ranker"],
        "fallback": row["fallback"],
        "error": row["error"],
        "candidates": row["candidates"],
        "injected": injected,
        "left_out": left,
        "below_cut": [{"filename": n, "score": s} for n, s in below],
        "below_cut_count": count,
        "turn_found": turn is not None,
    }


# dict[str, Any]: one memory of explain()'s JSON report.
def _memory(
    rank: int, name: str, score: float | None, row: sqlite3.Row, turn: Turn | None
) -> dict[str, Any]:
    path = os.path.join(row["dir"] or "", name)
    try:
        text: str | None = memory_text(path)
    except OSError:
        text = None
    entry = {"filename": name, "path": path, "age_days": 0.0}
    tokens = (
        None
        if text is None
        else math.ceil(len(memory_block(entry, text).encode()) / BYTES_PER_TOKEN)
    )
    read = quoted = delivered = None
    if turn is not None:
        delivered = any(os.path.realpath(p) == path for p in turn.injected)
        read = any(os.path.realpath(p) == path for p in turn.read)
        quoted = name in turn.answer or (text is not None and quotes(turn.answer, text))
    return {
        "rank": rank,
        "filename": name,
        "path": path,
        "score": score,
        "judge": None if score is not None else row["ranker"],
        "tokens": tokens,
        "delivered": delivered,
        "read": read,
        "quoted": quoted,
    }


def quotes(answer: str, text: str) -> bool:
    """Whether ``answer`` holds :data:`QUOTE_WORDS` consecutive words of ``text`` (case folded)."""
    n = QUOTE_WORDS
    ours = _WORD.findall(text.lower())
    grams = {tuple(ours[i : i + n]) for i in range(len(ours) - n + 1)}
    theirs = _WORD.findall(answer.lower())
    return any(tuple(theirs[i : i + n]) in grams for i in range(len(theirs) - n + 1))


def render(report: WhyReport) -> str:
    """The report as lines for a terminal."""
    where = report["transcript"] or "no transcript found"
    lines = [f"session {report['session_id']} in {report['dir']} ({where})"]
    for n, p in enumerate(report["prompts"], 1):
        query = (
            f'"{p["query"]}"'
            if p["query"] is not None
            else f"sha256:{p['query_hash']} ({p['query_len']} chars; query logging is off)"
        )
        lines += ["", f"prompt {n} at {p['at']}: {query}"]
        if p["error"]:
            lines.append(f"  failed: {p['error']}")
            continue
        how = f" (local answered: {p['fallback']})" if p["fallback"] else ""
        chosen = f"{len(p['injected'])} of {p['candidates']} candidates"
        lines.append(f"  ranker {p['ranker']}{how}: {chosen}")
        for m in p["injected"]:
            why = f"score {m['score']:.3f}" if m["score"] is not None else f"picked by {m['judge']}"
            cost = "?" if m["tokens"] is None else f"~{m['tokens']}"
            lines.append(f"  {m['rank']}. {m['filename']}  {why}  {cost} tokens  {_used(m)}")
        lines += [
            f"  left out, {_RULES.get(k, k)}: {', '.join(v)}" for k, v in p["left_out"].items()
        ]
        if p["below_cut_count"]:
            near = ", ".join(f"{b['filename']} ({b['score']:.3f})" for b in p["below_cut"])
            near = f"; closest: {near}" if near else ""
            lines.append(f"  below the cut: {p['below_cut_count']} other candidates{near}")
    if not report["prompts"]:
        lines.append("(no selects recorded for this session)")
    lines += ["", report["tokens_note"]]
    return "\n".join(lines)


def _used(m: Mapping[str, Any]) -> str:
    if m["read"] is None:
        return "(use unknown: no transcript turn)"
    said = [w for w, on in (("read the file", m["read"]), ("quoted it", m["quoted"])) if on]
    used = ", ".join(said) if said else "not used"
    return used if m["delivered"] else f"{used} (not in the transcript's hook context)"


def db_of(path: Path | None, status_db: str | None) -> Path:
    """The index to read: the one given, else the running daemon's, else the default."""
    return path or (Path(status_db) if status_db else paths.default_db())
