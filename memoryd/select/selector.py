"""``select``: the up-to-5 memories that clearly help a query, under fixed rules.

The rules live here, outside the rankers, so no ranker can break them:

* the manifest is the directory's parsed memory files minus ``MEMORY.md``,
  minus files already ``surfaced``, minus files flagged as holding secrets
  (unless the caller opts in), minus usage/API docs for tools in
  ``recent_tools`` (their gotchas stay eligible);
* every returned filename is in that manifest and still on disk; anything a
  ranker invents is dropped and counted;
* at most ``limit`` (≤ 5) results, and an empty answer is a fine answer;
* the daemon keeps no record of what a session was shown: only the client
  knows whether its answer reached the agent (a hook may have given up
  before it came), so the client passes ``surfaced`` and owns that record
  (docs/claude-code.md, "Shown means delivered").

The Claude ranker answers when configured (``auto``) and the local ranker
whenever Claude cannot, with ``fallback`` saying why. A request's
``timeout_ms`` is the time its client waits: Claude gets what is left of it
minus :data:`LOCAL_RESERVE_S` (the local ranker's share), and when it has not
answered by then the local ranker does (``fallback: deadline``); Claude's late
answer still fills the cache for the next ask. Every call ends in exactly one
telemetry record, errors included. ``anthropic`` without a configured
key is refused (``invalid_params``) rather than answered locally.
"""

from __future__ import annotations

import concurrent.futures
import os
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import structlog

from memoryd.errors import InvalidParams
from memoryd.indexer.folders import empty_folder_note
from memoryd.indexer.queries import IndexedFile, iso_utc
from memoryd.replies import SelectedMemory, SelectResult
from memoryd.select.candidates import Candidate
from memoryd.select.local import LocalRanker, Scored
from memoryd.select.manifest import Manifest, ManifestCache, candidates_for
from memoryd.select.postings import Postings
from memoryd.select.relations import Relations
from memoryd.select.telemetry import left_out
from memoryd.select.tool_rules import tool_usage_docs
from memoryd.select.types import Selection, SelectRequest
from memoryd.staleness.results import intact_first, verdicts_for

CLAUDE_MANIFEST_LIMIT = 200
LOCAL_RESERVE_S = 0.3
"""Of a request's ``timeout_ms``, what the local ranker (and the rest of the answer) keeps."""
MIN_CLAUDE_S = 0.2
"""Claude is not asked with less time than this left: it could not answer in it."""
CLAUDE_WORKERS = 4

log = structlog.get_logger("memoryd.selector")

NO_CLAUDE = (
    "ranker 'anthropic' needs an Anthropic API key and none is configured "
    "(set anthropic.api_key in config.yaml, or ANTHROPIC_API_KEY for memoryd serve); "
    "use ranker 'auto' or 'local'"
)
"""An explicit choice that cannot be honoured is refused, not answered by the local ranker."""


@dataclass(frozen=True)
class ClaudeOutcome:
    """One ask of the Claude ranker: its picks, or the failure code; tokens billed either way."""

    names: list[str] | None
    failure: str | None
    tokens: tuple[int, int]


class Selector:
    """Shared by every request thread: rankers, manifest cache, Claude answer cache."""

    def __init__(
        self, *, log_queries: bool = False, claude_factory: Callable[[], Any] | None = None
    ) -> None:
        self.log_queries = log_queries
        self.claude_factory = claude_factory
        self.local = LocalRanker()
        self.manifests = ManifestCache()
        self._claude_cache: OrderedDict[tuple[Any, ...], tuple[str, ...]] = OrderedDict()
        self._lock = threading.Lock()
        # Claude is asked in a worker thread so a request's deadline can end the
        # wait without ending the call, whose answer is cached when it comes.
        self._claude_pool: concurrent.futures.ThreadPoolExecutor | None = None

    def reconfigure(self, *, log_queries: bool, claude_factory: Callable[[], Any] | None) -> None:
        """SIGHUP: query logging and the Claude ranker as the new config says, from the next run."""
        self.log_queries = log_queries
        self.claude_factory = claude_factory

    def index_replaced(self) -> None:
        """A rebuilt index numbers its folders' versions from 1 again: drop what was cached."""
        self.manifests = ManifestCache()

    # -- the selection itself -------------------------------------------------

    def run(
        self,
        conn: sqlite3.Connection,
        req: SelectRequest,
        directory: str,
        run_id: str,
        *,
        deadline: float | None = None,
    ) -> Selection:
        """Select for ``req`` among the memories of ``directory`` (already resolved and current).

        ``deadline`` (a ``time.monotonic()`` value) is when the client stops
        waiting; without one it is ``req.timeout_ms`` from now, if set.
        Telemetry is the caller's: :meth:`memoryd.service.MemoryService.cmd_select`
        records every run, failed ones included.
        """
        if req.ranker == "anthropic" and self.claude_factory is None:
            raise InvalidParams(NO_CLAUDE, {"field": "ranker"})
        if deadline is None and req.timeout_ms is not None:
            deadline = time.monotonic() + req.timeout_ms / 1000
        manifest = self.manifests.get(conn, directory)
        pool = _Pool.of(conn, manifest, req, directory)
        ranked = self._ranked(req, manifest, pool, deadline)
        selected, vanished = _checked(conn, ranked.picks, pool.files, req.limit)
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
            "latency_ms": 0.0,
        }
        rules = {"surfaced": pool.shown, "secrets": pool.secrets, "tool_docs": pool.tool_docs}
        rules |= {"superseded": pool.stale, "duplicates_of_surfaced": pool.twins}
        unpicked = len(pool.cands) - len(ranked.picks)
        return Selection(result, ranked.tokens, left_out(rules, ranked.below, unpicked))

    def _ranked(
        self, req: SelectRequest, manifest: Manifest, pool: _Pool, deadline: float | None
    ) -> _Ranked:
        """Claude's picks when it is configured, asked and answers; the local ranker's otherwise."""
        if self.claude_factory is not None and req.ranker != "local" and pool.cands:
            outcome = self._ask_claude(
                req, pool.cands, manifest.relations, postings=manifest.postings, deadline=deadline
            )
            if outcome.names is not None:
                picks: list[tuple[str, float | None]] = []
                dropped: list[str] = []
                for name in outcome.names:
                    if name not in pool.files:
                        dropped.append(name)
                    elif name not in (n for n, _ in picks):
                        picks.append((name, None))
                return _Ranked("anthropic", picks, dropped, None, outcome.tokens)
            local, below = self._local_picks(req, manifest, pool)
            return _Ranked("local", local, [], outcome.failure, outcome.tokens, below)
        local, below = self._local_picks(req, manifest, pool)
        return _Ranked("local", local, [], None, (0, 0), below)

    def _local_picks(
        self, req: SelectRequest, manifest: Manifest, pool: _Pool
    ) -> tuple[list[tuple[str, float | None]], list[Scored]]:
        """The local ranker's picks with their scores, and its best misses.

        Surfaced memories compete (they set the bar) but are never returned:
        when the best matches were already shown, weaker ones do not stand in.
        """
        seen = [c for c in pool.surfaced if c.filename not in pool.stale]
        below: list[Scored] = []
        ranked = self.local.rank(
            req.query,
            pool.cands + seen,
            req.limit,
            manifest.relations,
            shown=pool.shown,
            postings=manifest.postings,
            below=below,
        )
        return [(s.filename, s.score) for s in ranked], below

    def _ask_claude(
        self,
        req: SelectRequest,
        cands: list[Candidate],
        relations: Relations | None,
        *,
        postings: Postings | None,
        deadline: float | None = None,
    ) -> ClaudeOutcome:
        """Claude's picks (cached by the exact prompt inputs), or why it gave none.

        The cache key is what Claude is shown (query, manifest lines, recent
        tools), not the request: the same question with different candidates
        (e.g. once a session has seen the first picks) is a different question.
        """
        from memoryd.select.claude import ManifestEntry, RankerFailure  # noqa: PLC0415

        if len(cands) > CLAUDE_MANIFEST_LIMIT:
            scores = self.local.scores(req.query, cands, postings)
            cands = sorted(cands, key=lambda c: (-scores[c.filename], c.filename))
            cands = cands[:CLAUDE_MANIFEST_LIMIT]
        if relations is not None:
            cands = [c for c in cands if c.filename not in relations.superseded]
        entries = tuple(ManifestEntry(c.filename, c.type, c.mtime, c.description) for c in cands)
        key = (req.query, entries, req.recent_tools)
        with self._lock:
            hit = self._claude_cache.get(key)
        if hit is not None:
            return ClaudeOutcome(list(hit), None, (0, 0))
        ranker = self.claude_factory()  # type: ignore[misc]

        def ask() -> Any:
            pick = ranker.rank(req.query, entries, req.recent_tools)
            with self._lock:
                self._claude_cache[key] = tuple(pick.filenames)
                while len(self._claude_cache) > 512:
                    self._claude_cache.popitem(last=False)
            return pick

        try:
            if deadline is None:
                pick = ask()
            else:
                pick = self._ask_by(deadline, ask)
                if pick is None:
                    return ClaudeOutcome(None, "deadline", (0, 0))
        except RankerFailure as exc:
            # A refusal or a malformed answer was still billed.
            return ClaudeOutcome(None, exc.reason, (exc.input_tokens, exc.output_tokens))
        return ClaudeOutcome(list(pick.filenames), None, (pick.input_tokens, pick.output_tokens))

    def _ask_by(self, deadline: float, ask: Callable[[], Any]) -> Any:
        """``ask()``'s answer if it comes :data:`LOCAL_RESERVE_S` before ``deadline``, else None.

        The call goes on in its worker when the wait ends (bounded by the
        ranker's own timeout) and caches its answer, so the next ask with
        the same inputs is answered at once.
        """
        wait = deadline - time.monotonic() - LOCAL_RESERVE_S
        if wait < MIN_CLAUDE_S:
            log.info("claude_ranker_skipped", reason="deadline", left_ms=round(wait * 1000))
            return None
        with self._lock:
            if self._claude_pool is None:
                self._claude_pool = concurrent.futures.ThreadPoolExecutor(
                    CLAUDE_WORKERS, thread_name_prefix="claude-ranker"
                )
            pool = self._claude_pool
        future = pool.submit(ask)
        try:
            return future.result(timeout=wait)
        except concurrent.futures.TimeoutError:
            log.info("claude_ranker_deadline", waited_ms=round(wait * 1000))
            return None


def surfaced_names(entries: tuple[str, ...], directory: str) -> set[str]:
    """The file names ``surfaced`` stands for: bare names, or absolute paths inside ``directory``.

    ``select`` prints full paths, so an agent passing back what it was shown
    must exclude those files; a path outside the folder (or a relative one,
    whose base the daemon cannot know) would silently exclude nothing, so it
    is refused, naming the entry.
    """
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
    files: dict[str, IndexedFile]
    """The eligible candidates' files, by file name: what a pick may name."""
    surfaced: list[Candidate]
    """The candidates the client was shown already (out, but they set the local bar)."""
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
        # Links are computed once per directory version (for a large directory,
        # supersession only), never per query.
        relations = manifest.relations
        secrets = set() if req.allow_secrets else {f.filename for f, _ in pool if f.secrets}
        shown = {c.filename for _, c in pool if c.filename in surfaced} if surfaced else set()
        # A near-duplicate of something already shown adds nothing, and a
        # memory whose successor exists is stale: neither is a candidate.
        twins = _twins_of(relations, shown) if relations is not None else set()
        stale = set(relations.superseded) if relations is not None else set()
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

    ranker: str
    picks: list[tuple[str, float | None]]
    dropped: list[str]
    """Names Claude gave that are not eligible candidates."""
    fallback: str | None
    tokens: tuple[int, int]
    below: list[Scored] = field(default_factory=list)  # the local ranker's best misses


def _checked(
    conn: sqlite3.Connection,
    picks: list[tuple[str, float | None]],
    files: dict[str, IndexedFile],
    limit: int,
) -> tuple[list[SelectedMemory], int]:
    """The first ``limit`` picks still readable, intact ones first; and how many had vanished."""
    verdicts = verdicts_for(conn, [files[name].path for name, _ in picks])
    ordered = intact_first(picks, lambda name: verdicts.get(files[name].path))
    selected: list[SelectedMemory] = []
    vanished = 0
    for name, score in ordered[:limit]:
        f = files[name]
        if not os.access(f.path, os.R_OK):  # gone, or locked since it was indexed
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
