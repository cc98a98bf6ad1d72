"""``select``: the up-to-``limit`` memories that clearly help a query, under fixed rules.

The rules hold whoever ranks: never ``MEMORY.md``, a ``surfaced`` file or its
near-duplicate, a file flagged for secrets (unless allowed), a usage doc of a
tool in ``recent_tools``, a superseded memory, nor a file gone from disk; a
name a judge invents is dropped and counted. A judge picks among the local
ranker's shortlist by the deadline, else the local answer goes out
(``fallback`` says why); a judge named but not configured is refused.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from memoryd.bounded_read import readable
from memoryd.config import DEFAULT_SHORTLIST
from memoryd.errors import InvalidParams
from memoryd.indexer.queries import IndexedFile, iso_utc
from memoryd.indexer.scanner import empty_folder_note, is_memory_folder
from memoryd.methods import Select as SelectRequest
from memoryd.replies import Ranker, SelectedMemory, SelectResult
from memoryd.select.candidates import Candidate
from memoryd.select.dated import own_date
from memoryd.select.judge import (
    Judge,
    Judges,
    Shortlisted,
    as_written,
    body_excerpt,
    user_message,
)
from memoryd.select.local import LocalRanker, Scored
from memoryd.select.manifest import Manifest, ManifestCache, candidates_for
from memoryd.select.relations import Relations
from memoryd.select.telemetry import Selection, left_out
from memoryd.select.tool_rules import tool_usage_docs
from memoryd.staleness.results import intact_first, verdicts_for

MAX_DROPPED = 10  # unknown names a reply lists, each cut to DROPPED_CHARS
DROPPED_CHARS = 100

NOT_CONFIGURED = {
    "anthropic": "ranker 'anthropic' needs an Anthropic API key and none is configured "
    "(set anthropic.api_key in config.yaml, or ANTHROPIC_API_KEY for memoryd serve)",
    "openai": "ranker 'openai' needs an OpenAI-compatible server and none is configured "
    "(set openai.base_url and openai.model in config.yaml)",
}


class Selector:
    """Shared by every request thread: rankers, manifest cache, judges' answer cache."""

    def __init__(
        self,
        *,
        log_queries: bool = False,
        judges: Mapping[str, Callable[[], Judge]] | None = None,
        shortlist: int = DEFAULT_SHORTLIST,
    ) -> None:
        self.judges = Judges({})
        self.reconfigure(log_queries=log_queries, judges=judges or {}, shortlist=shortlist)
        self.local = LocalRanker()
        self.manifests = ManifestCache()

    def reconfigure(
        self, *, log_queries: bool, judges: Mapping[str, Callable[[], Judge]], shortlist: int
    ) -> None:
        """SIGHUP: query logging, the judges and the shortlist as the new config says."""
        self.log_queries = log_queries
        self.judges.close()
        self.judges = Judges(judges)
        self.shortlist = shortlist

    def index_replaced(self) -> None:
        """A rebuilt index numbers its folders' versions from 1 again: drop what was cached."""
        self.manifests = ManifestCache()

    def run(
        self,
        conn: sqlite3.Connection,
        req: SelectRequest,
        directory: str,
        run_id: str,
        *,
        deadline: float | None = None,
    ) -> Selection:
        """Select for ``req`` among the memories of ``directory`` (resolved and current) by
        ``deadline`` (``time.monotonic()``; default ``req.timeout_ms`` from now). Telemetry is
        the caller's."""
        judge = self._judge_for(req.ranker)
        if deadline is None and req.timeout_ms is not None:
            deadline = time.monotonic() + req.timeout_ms / 1000
        manifest = self.manifests.get(conn, directory)
        pool = _Pool.of(conn, manifest, req, directory)
        ranked = self._ranked(conn, req, manifest, pool, judge, deadline=deadline)
        selected, vanished = _checked(conn, ranked.picks, pool.files, req.limit, directory)
        result: SelectResult = {
            "run_id": run_id,
            "ranker": ranked.ranker,
            "selected": selected,
            "candidates": len(pool.cands),
            "excluded": {
                "surfaced": len(pool.shown),
                "index": int(manifest.has_index_file),
                "tool_docs": len(pool.tool_docs),
                "tool_doc_files": pool.tool_docs,
                "secrets": len(pool.secrets),
                "duplicates_of_surfaced": len(pool.twins),
                "superseded": len(pool.stale),
                "vanished": vanished,
            },
            "dropped_unknown": ranked.dropped,
            "fallback": ranked.fallback,
            "note": None if manifest.total else empty_folder_note(directory),
            "memory_folder": bool(manifest.total) or is_memory_folder(directory),
            "latency_ms": 0.0,
        }
        rules = {"surfaced": pool.shown, "secrets": pool.secrets, "tool_docs": pool.tool_docs}
        rules |= {"superseded": pool.stale, "duplicates_of_surfaced": pool.twins}
        picked = {name for name, _ in ranked.picks}
        below = [s for s in ranked.below if s.filename not in picked]
        left = left_out(rules, below, len(pool.cands) - len(picked))
        return Selection(result, ranked.tokens, judge, ranked.shortlist, ranked.judge_ms, left)

    def _judge_for(self, ranker: str) -> Ranker | None:
        """The judge a request's ``ranker`` asks for: none, the configured one, or the one named."""
        if ranker == "local":
            return None
        if ranker == "auto":
            return cast(Ranker | None, self.judges.first)
        if ranker not in self.judges.names:
            raise InvalidParams(
                f"{NOT_CONFIGURED[ranker]}; use ranker 'auto' or 'local'", {"field": "ranker"}
            )
        return cast(Ranker, ranker)

    def _ranked(
        self,
        conn: sqlite3.Connection,
        req: SelectRequest,
        manifest: Manifest,
        pool: _Pool,
        judge: Ranker | None,
        *,
        deadline: float | None,
    ) -> _Ranked:
        """The judge's picks among the shortlist when it is asked and answers; else the local
        ones. Surfaced memories set the local bar but are never returned nor shortlisted."""
        seen = [c for c in pool.surfaced if c.filename not in pool.stale]
        flagged = sum(1 for f in pool.files.values() if f.secrets)  # never shown to a judge
        below: list[Scored] = []
        answer, best = self.local.ranked(
            req.query,
            pool.cands + seen,
            req.limit,
            manifest.relations,
            shown=pool.shown,
            shortlist=self.shortlist + flagged if judge is not None else 0,
            below=below,
        )
        local: list[tuple[str, float | None]] = [(s.filename, s.score) for s in answer]
        shortlist = _shortlisted(conn, best, pool)[: self.shortlist] if judge is not None else []
        if judge is None or not shortlist:
            return _Ranked("local", local, below, len(shortlist))
        message = user_message(req.query, shortlist, req.recent_tools, req.limit)
        outcome = self.judges.ask(judge, message, deadline)
        if outcome.names is None:
            n, failure, tokens = len(shortlist), outcome.failure, outcome.tokens
            return _Ranked("local", local, below, n, [], failure, tokens, outcome.ms)
        known = as_written(shortlist)
        picks: dict[str, None] = {}
        dropped: list[str] = []
        for name in outcome.names:
            if name in known:
                picks.setdefault(known[name], None)
            elif len(dropped) < MAX_DROPPED:
                dropped.append(
                    name if len(name) <= DROPPED_CHARS else name[: DROPPED_CHARS - 1] + "…"
                )
        ranked: list[tuple[str, float | None]] = [(name, None) for name in picks]
        return _Ranked(
            judge, ranked, below, len(shortlist), dropped, None, outcome.tokens, outcome.ms
        )


def _shortlisted(conn: sqlite3.Connection, best: list[Scored], pool: _Pool) -> list[Shortlisted]:
    """The judge's view of the shortlist, best first: never a file flagged for secrets (the
    judge may be remote), nor one gone from disk."""
    files = [pool.files[s.filename] for s in best]
    files = [f for f in files if not f.secrets and os.access(f.path, os.R_OK)]
    if not files:
        return []
    marks = ",".join("?" * len(files))
    bodies = dict(
        conn.execute(
            f"SELECT filename, substr(body, 1, 4000) FROM files WHERE directory = ? "
            f"AND filename IN ({marks})",
            (files[0].directory, *(f.filename for f in files)),
        ).fetchall()
    )
    cands = {c.filename: c for c in pool.cands}
    out = []
    for f in files:
        c = cands[f.filename]
        day = own_date(c)
        date = "%04d-%02d-%02d" % day if day else iso_utc(f.mtime)[:10]  # noqa: UP031
        body = body_excerpt(str(bodies.get(f.filename) or ""))
        out.append(Shortlisted(f.filename, c.type, date, c.description, c.hook, body))
    return out


def surfaced_names(entries: tuple[str, ...], directory: str) -> set[str]:
    """The file names ``surfaced`` stands for: bare names, or absolute paths inside
    ``directory``; a relative path or one outside the folder is refused."""
    names = set()
    for entry in entries:
        if "/" not in entry:
            names.add(entry)
            continue
        if not os.path.isabs(entry):
            problem = "is a relative path; pass the file name or an absolute path"
        elif os.path.realpath(os.path.dirname(entry)) != directory:
            problem = f"is not a file of {directory}"
        else:
            names.add(os.path.basename(entry))
            continue
        raise InvalidParams(f"'surfaced' entry {entry!r} {problem}", {"field": "surfaced"})
    return names


@dataclass(frozen=True)
class _Pool:
    """A request's candidates after the rules, and what each rule left out."""

    cands: list[Candidate]
    files: dict[str, IndexedFile]  # the eligible ones, by file name
    surfaced: list[Candidate]  # shown already: out, but they set the local bar
    shown: set[str]
    secrets: set[str]
    twins: set[str]
    stale: set[str]
    tool_docs: list[str]

    @classmethod
    def of(
        cls, conn: sqlite3.Connection, manifest: Manifest, req: SelectRequest, directory: str
    ) -> _Pool:
        pool = candidates_for(conn, manifest, req.query)
        surfaced = surfaced_names(req.surfaced, directory)
        secrets = set() if req.allow_secrets else {f.filename for f, _ in pool if f.secrets}
        shown = {c.filename for _, c in pool if c.filename in surfaced} if surfaced else set()
        twins = _twins_of(manifest.relations, shown)
        stale = set(manifest.relations.superseded)
        skip = shown | secrets | twins | stale
        eligible = [(f, c) for f, c in pool if c.filename not in skip]
        tool_docs = sorted(tool_usage_docs([c for _, c in eligible], req.recent_tools))
        if tool_docs:
            eligible = [(f, c) for f, c in eligible if c.filename not in tool_docs]
        return cls(
            cands=[c for _, c in eligible],
            files={f.filename: f for f, _ in eligible},
            surfaced=[c for _, c in pool if c.filename in shown],
            shown=shown,
            secrets=secrets,
            twins=twins,
            stale=stale,
            tool_docs=tool_docs,
        )


@dataclass(frozen=True)
class _Ranked:
    """A ranker's picks (file name, score when it gives one) and what came with them."""

    ranker: Ranker
    picks: list[tuple[str, float | None]]
    below: list[Scored]  # the local ranker's best misses, whoever picked
    shortlist: int
    dropped: list[str] = field(default_factory=list)
    fallback: str | None = None
    tokens: tuple[int, int] = (0, 0)
    judge_ms: float | None = None


def _checked(
    conn: sqlite3.Connection,
    picks: list[tuple[str, float | None]],
    files: dict[str, IndexedFile],
    limit: int,
    directory: str,
) -> tuple[list[SelectedMemory], int]:
    """The first ``limit`` picks still readable as the hook reads them (within ``directory``),
    intact ones first; and how many had vanished."""
    verdicts = verdicts_for(conn, [files[name].path for name, _ in picks])
    ordered = intact_first(picks, lambda name: verdicts.get(files[name].path))
    selected: list[SelectedMemory] = []
    vanished = 0
    for name, score in ordered[:limit]:
        f = files[name]
        if not readable(f.path, within=directory):  # gone, locked or linked since indexed
            vanished += 1
            continue
        selected.append(_entry(f, score, verdicts.get(f.path)))
    return selected, vanished


def _twins_of(relations: Relations, shown: set[str]) -> set[str]:
    if not shown:  # near-duplicates are found when first asked for: do not ask for nothing
        return set()
    twins = {b for a, b in relations.near_duplicates if a in shown}
    twins |= {a for a, b in relations.near_duplicates if b in shown}
    return twins - shown


def _entry(f: IndexedFile, score: float | None, staleness: Any) -> SelectedMemory:
    age_days = max(0.0, (time.time() - f.mtime) / 86400)
    return {
        "filename": f.filename,
        "path": f.path,
        "name": f.name,
        "description": f.description,
        "type": f.type,
        "mtime": iso_utc(f.mtime),
        "age_days": round(age_days, 2),
        "score": score,
        "staleness": staleness,
    }
