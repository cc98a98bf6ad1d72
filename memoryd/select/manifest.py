"""A directory's candidate memories, from the index, cached per version within a byte budget.

A small folder is loaded whole with its links; a large one is ranked over FTS5's
best slice per query (:mod:`.large`), without near-duplicates, and a new version
of it keeps every unchanged memory's header and signals.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain
from pathlib import PurePath

import structlog

from memoryd._sized_cache import SizedCache
from memoryd.indexer import queries
from memoryd.indexer.queries import IndexedFile
from memoryd.indexer.records import INDEX_FILENAME, KIND_MEMORY
from memoryd.select import large, relations
from memoryd.select.analysis import DocTerms, analyse, with_hook
from memoryd.select.candidates import Candidate, effective_type, index_hooks
from memoryd.select.large import LARGE_DIRECTORY, Head
from memoryd.select.relations import Relations
from memoryd.select.supersession import NO_SIGNALS, signals_of, superseded_by, superseded_from
from memoryd.select.tool_rules import commands_in

_MEMORY_STATE = (
    "SELECT filename, content_hash, size, mtime_ns FROM files "
    "WHERE directory = ? AND kind = 'memory' AND error IS NULL ORDER BY filename"
)
CACHE_BYTES = 64 << 20
# Rough bytes per file, per kept signal and per kept large-folder header besides their text.
_FILE_OVERHEAD = 1200
_SIGNAL_OVERHEAD = 200
_HEAD_OVERHEAD = 500
log = structlog.get_logger("memoryd.selector")


@dataclass
class Manifest:
    directory: str
    version: int
    files: list[IndexedFile]
    has_index_file: bool
    total: int
    relations: Relations = field(default_factory=Relations)
    state: int = 0  # a small folder's hash of its _MEMORY_STATE rows and MEMORY.md
    candidates: list[Candidate] = field(default_factory=list)  # a small folder's, no body
    heads: dict[str, Head] = field(default_factory=dict)  # a large folder's headers and signals

    @property
    def large(self) -> bool:
        return self.total > LARGE_DIRECTORY

    @property
    def weight(self) -> int:
        """Rough bytes held, for the cache's memory budget."""
        text = sum(len(f.description or "") + _FILE_OVERHEAD for f in self.files)
        said = [s for _, _, s in self.heads.values() if s is not None]
        held = 4096 + text + _HEAD_OVERHEAD * len(self.heads) + _SIGNAL_OVERHEAD * len(said)
        held += sum(len(s.banner or "") + sum(map(len, s.claims)) for s in said)
        return held + sum(c.terms.weight for c in self.candidates if c.terms is not None)


def analyse_file(f: IndexedFile, hook: str = "") -> DocTerms:
    return with_hook(analyse(f.filename, f.name, f.description, f.body), hook)


def to_candidate(
    f: IndexedFile,
    terms: DocTerms | None = None,
    commands: tuple[str, ...] | None = None,
    hook: str = "",
) -> Candidate:
    return Candidate(
        filename=f.filename,
        name=f.name or PurePath(f.filename).stem,
        description=f.description or "",
        type=effective_type(f.type, f.filename),
        body=f.body,
        mtime=f.mtime,
        terms=terms,
        commands=commands,
        header=f.meta.get("header", {}),
        hook=hook,
    )


def superseded_in(files: Sequence[IndexedFile]) -> dict[str, str | None]:
    """Stale memories among ``files`` (any directories), by path, with their successor's name."""
    by_dir: defaultdict[str, list[IndexedFile]] = defaultdict(list)
    for f in files:
        if f.kind == "memory" and f.error is None:
            by_dir[f.directory].append(f)
    out: dict[str, str | None] = {}
    for memories in by_dir.values():
        paths = {f.filename: f.path for f in memories}
        for old, new in superseded_by([to_candidate(f) for f in memories]).items():
            out[paths[old]] = new
    return out


class ManifestCache:
    """Per-directory manifests keyed by the directory's index version, within a memory budget."""

    def __init__(self, budget: int = CACHE_BYTES) -> None:
        self._items: SizedCache[str, Manifest] = SizedCache(budget)

    def get(self, conn: sqlite3.Connection, directory: str) -> Manifest:
        version = queries.directory_version(conn, directory)
        cached = self._items.get(directory)
        if cached is not None and cached.version == version:
            return cached
        with _snapshot(conn):  # the load's queries all see one state of the index
            version = queries.directory_version(conn, directory)
            manifest = _load(conn, directory, version, cached)
        self._items.put(directory, manifest, manifest.weight)
        return manifest


@contextlib.contextmanager
def _snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """A read transaction around the block, unless the caller already holds one."""
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("COMMIT")


def _load(
    conn: sqlite3.Connection, directory: str, version: int, previous: Manifest | None = None
) -> Manifest:
    """The manifest of ``directory`` at ``version``, ``previous`` (its older manifest) when no
    memory changed; a large folder reuses what it read of unchanged memories."""
    cursor = conn.execute(_MEMORY_STATE, (directory,))
    stamps = cursor.fetchmany(LARGE_DIRECTORY + 1)
    index = conn.execute(  # MEMORY.md: whether it is there, and its text unless unusable
        "SELECT CASE WHEN error IS NULL THEN coalesce(body, '') ELSE '' END FROM files "
        "WHERE directory = ? AND filename = ?",
        (directory, INDEX_FILENAME),
    ).fetchone()
    has_index = index is not None
    if len(stamps) > LARGE_DIRECTORY:  # its rows streamed: 50k are never all held at once
        started = time.perf_counter()
        before = previous if previous is not None and previous.large else None
        held, changed = large.heads_of(chain(stamps, cursor), before.heads if before else {})
        same = before is not None and before.has_index_file == has_index
        if before is not None and same and not changed and len(held) == len(before.heads):
            return replace(before, version=version)  # no memory changed
        manifest = Manifest(directory, version, [], has_index, len(held), heads=held)
        manifest.relations = large.relations(conn, directory, held, changed)
        log.info(
            "select.large_folder_loaded",
            dir=directory,
            files=len(held),
            links_s=round(time.perf_counter() - started, 3),
        )
        return manifest
    index_text = str(index[0]) if index is not None else ""
    state = hash((tuple(map(tuple, stamps)), index_text))
    if previous is not None and previous.state == state and previous.has_index_file == has_index:
        return replace(previous, version=version)  # no memory changed
    manifest = Manifest(directory, version, [], has_index, len(stamps), state=state)
    rows = [
        queries.row_to_file(row)
        for row in conn.execute(
            f"SELECT {large.COLUMNS} FROM files WHERE directory = ? AND kind = 'memory' "
            "AND error IS NULL ORDER BY filename",
            (directory,),
        )
    ]
    hooks = index_hooks(index_text, [to_candidate(f) for f in rows]) if index_text else {}
    # A cached folder keeps no bodies: the links read them once, the tool-doc rule commands.
    everyone, signalled = [], []
    for f in rows:
        hook = hooks.get(f.filename, "")
        kept = _without_text(f, directory)
        manifest.files.append(kept)
        commands = commands_in(f.body)
        doc = analyse_file(f, hook)
        c = to_candidate(f, doc, commands=commands, hook=hook)
        manifest.candidates.append(to_candidate(kept, doc, commands=commands, hook=hook))
        everyone.append(c)
        if (said := signals_of(c)) is not NO_SIGNALS:
            signalled.append((c, said))
    stale = superseded_from(signalled, everyone, quoted_only=False)
    bodiless = manifest.candidates  # what near-duplicates read until they are found
    manifest.relations = Relations(stale, lambda: relations.twins_of(bodiless, stale))
    return manifest


def _without_text(f: IndexedFile, directory: str) -> IndexedFile:
    """What a cached folder keeps of ``f``: no body nor hash, one shared directory string."""
    return replace(f, directory=directory, kind=KIND_MEMORY, body="", content_hash=None)


def candidates_for(
    conn: sqlite3.Connection, manifest: Manifest, query: str
) -> list[tuple[IndexedFile, Candidate]]:
    """The files a query is ranked over: all of a small directory, a BM25 slice of a big one."""
    if not manifest.large:
        return list(zip(manifest.files, manifest.candidates, strict=True))
    files = [queries.row_to_file(row) for row in large.prefiltered(conn, manifest.directory, query)]
    return [(f, to_candidate(f, analyse_file(f))) for f in files]
