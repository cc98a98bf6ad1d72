"""Where a directory's candidate memories come from: the index, never a rescan.

Small directories (the usual case: tens of files) are loaded whole and kept
per directory version, each memory with the ranker's analysis of its stored
text (:func:`memoryd.select.analysis.analyse`) and the folder's links. A new
version of the folder (an index change) is patched, not rebuilt: every memory
whose row did not change keeps its analysis and what it said about
supersession, so an edit costs the analysis of the edited file. Manifests are
kept in a cache bounded by the memory they hold, so many folders cost what
they weigh, not a fixed count.

Large ones are cut down per query to the ``PREFILTER_LIMIT`` memories FTS5's
BM25 ranks best (``rank``, which migration 005 weights towards filename, name
and description), analysed when first met and kept while unchanged: FTS5
already is the folder's inverted index, on disk, so the daemon holds no second
one in memory. Their supersession links are computed once per version, from
headers and the few files that carry a signal word (near-duplicates are not).
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import PurePath

import structlog

from memoryd._sized_cache import SizedCache
from memoryd._unicode_words import is_gram
from memoryd._unicode_words import words as unicode_words
from memoryd.indexer import queries
from memoryd.indexer.queries import IndexedFile
from memoryd.indexer.records import INDEX_FILENAME, KIND_MEMORY
from memoryd.select._text import STOPWORDS
from memoryd.select.analysis import DESC, NAME, DocTerms, analyse, with_hook
from memoryd.select.candidates import Candidate, effective_type
from memoryd.select.folder_links import index_hooks
from memoryd.select.relations import Header, Relations
from memoryd.select.supersession import (
    NO_SIGNALS,
    SIGNAL_WORDS,
    Signals,
    signals_of,
    superseded_by,
    superseded_from,
)
from memoryd.select.tool_rules import commands_in

LARGE_DIRECTORY = 300
"""Above this many memory files, candidates come from the FTS5 prefilter."""
PREFILTER_LIMIT = 150
"""Candidates a large folder's query is ranked over.

FTS5's BM25 (porter stems of the raw words) orders memories otherwise than the
ranker (its own terms, paraphrase concepts, field weights), so the slice is
wider than the five the ranker may return: wide enough that the memories it
would pick from the whole folder are nearly always in it, narrow enough that
ranking the slice stays a few milliseconds.
"""
LARGE_ANALYSES = 5_000
"""Analyses a large folder keeps for its slices, the least recently used going first."""
_MEMORY_STATE = (
    "SELECT filename, content_hash, size, mtime_ns FROM files "
    "WHERE directory = ? AND kind = 'memory' AND error IS NULL ORDER BY filename"
)
"""What tells a folder's memories from any earlier state of them (hashed together).

The folder's version moves on any change in it; when none of these did (a
session saved, MEMORY.md edited, a file only touched), its cached manifest
still holds, and the next select does not rebuild it.
"""
REFERENCING = (
    "SELECT files.filename, files.mtime_ns, files.size, files.content_hash "
    "FROM files_fts CROSS JOIN files ON files.rowid = files_fts.rowid "
    "WHERE files_fts MATCH :match AND files.directory = :dir "
    "AND files.kind = 'memory' AND files.error IS NULL ORDER BY files.filename"
)
"""A large folder's memories that carry a supersession signal word.

CROSS JOIN keeps SQLite from walking the folder's rows by directory and
running the MATCH once per row (which made up most of a large folder's first
select); the FTS5 hits are found once and then looked up by rowid.
"""
CACHE_BYTES = 64 << 20
"""Memory the manifest cache may hold (headers and analyses)."""
_FILE_OVERHEAD = 1200
"""Rough bytes of the per-file objects of a manifest besides its text."""
_SIGNAL_OVERHEAD = 200
"""Rough bytes of one entry of a large folder's kept signals besides their text."""
_HEAD_OVERHEAD = 500
"""Rough bytes of one of a large folder's kept headers, its text included."""
_WORD = re.compile(r"[A-Za-z0-9]+")
log = structlog.get_logger("memoryd.selector")
# The FTS table shares column names with ``files``, so qualify them in joins.
_COLUMNS = ", ".join(f"files.{c}" for c in queries.FILE_FIELDS.values())

Analysed = tuple[int, str, DocTerms]
"""A memory's stamp (see :func:`_stamp`), the ``MEMORY.md`` line read into it, its analysis."""


@dataclass
class Manifest:
    directory: str
    version: int
    files: list[IndexedFile]
    has_index_file: bool
    total: int
    relations: Relations | None = None
    state: int = 0
    """A hash of every memory's :data:`_MEMORY_STATE` row, in order."""
    candidates: list[Candidate] = field(default_factory=list)
    """A small folder's memories, in ``files`` order, each with its analysis (no body)."""
    analyses: dict[str, Analysed] = field(default_factory=dict)
    """Each memory's analysis (a large folder's: those of the slices met so far), for the
    folder's next version to keep when the memory's row and hook did not change."""
    signals: dict[str, tuple[int, Signals]] = field(default_factory=dict)
    """The folder's memories (a large folder's: those with a signal word in their
    text), each with its stamp (see :func:`_stamp`) and what it says about
    supersession: the next version of the folder reuses it for every memory
    whose row did not change, so an edit costs the patterns of the edited file."""
    headers: int = 0
    """A hash of a small folder's headers as near-duplicate links read them."""
    heads: dict[str, tuple[int, Candidate]] = field(default_factory=dict)
    """A large folder's memories as its supersession links read them (no body), each
    with its stamp: the next version reads again only the rows that changed."""

    @property
    def large(self) -> bool:
        return self.total > LARGE_DIRECTORY

    @property
    def weight(self) -> int:
        """Rough bytes held, for the cache's memory budget."""
        text = sum(len(f.description or "") + _FILE_OVERHEAD for f in self.files)
        held = 4096 + text + _SIGNAL_OVERHEAD * len(self.signals)
        held += _HEAD_OVERHEAD * len(self.heads)
        held += sum(
            len(said.banner or "") + sum(map(len, said.claims))
            for _, said in self.signals.values()
            if said is not NO_SIGNALS
        )
        return held + sum(doc.weight for _, _, doc in self.analyses.values())

    def pool(self) -> list[tuple[IndexedFile, Candidate]]:
        """A small folder's memories and their candidates, to rank a query over."""
        return list(zip(self.files, self.candidates, strict=True))

    def analysed(
        self, f: IndexedFile, hook: str = "", known: dict[str, Analysed] | None = None
    ) -> DocTerms:
        """The analysis of ``f`` (with ``hook``), kept from before (in ``known``, else this
        folder's own) when its row did not change."""
        stamp = _stamp(f.mtime_ns, f.size, f.content_hash)
        kept = (self.analyses if known is None else known).get(f.filename)
        if kept is not None and kept[0] == stamp and kept[1] == hook:
            self.analyses.pop(f.filename, None)  # to the end: the most recently used
            self.analyses[f.filename] = kept
            return kept[2]
        doc = with_hook(analyse(f.filename, f.name, f.description, f.body), hook)
        self.analyses.pop(f.filename, None)
        self.analyses[f.filename] = (stamp, hook, doc)
        if self.large and len(self.analyses) > LARGE_ANALYSES:
            with contextlib.suppress(StopIteration, KeyError, RuntimeError):
                del self.analyses[next(iter(self.analyses))]
        return doc


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
    """Stale memories among ``files`` (any directories), by path, with their successor's name.

    For ``list``: the selector never returns these, so a reader of the listing
    should see why.
    """
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


def fts_query(text: str) -> str | None:
    """An OR of the query's distinctive words, quoted so FTS5 syntax cannot leak in.

    Words of any script count; a run of Chinese or Japanese gives its bigrams,
    which the index's ``grams`` column holds (migration 011).
    """
    found = _WORD.findall(text) if text.isascii() else unicode_words(text)
    words = dict.fromkeys(w.lower() for w in found)
    terms = [w for w in words if w not in STOPWORDS and (len(w) > 1 or is_gram(w))]
    return " OR ".join(f'"{t}"' for t in terms[:64]) or None


class ManifestCache:
    """Per-directory manifests keyed by the directory's index version, within a memory budget."""

    def __init__(self, budget: int = CACHE_BYTES) -> None:
        self._items: SizedCache[str, Manifest] = SizedCache(budget)

    def get(self, conn: sqlite3.Connection, directory: str) -> Manifest:
        version = queries.directory_version(conn, directory)
        cached = self._items.get(directory)
        if cached is not None and cached.version == version:
            return cached
        with _snapshot(conn):
            # The load reads the folder's rows in several queries: all of them,
            # the version included, must see one state of the index.
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
    """The manifest of ``directory`` at ``version``, from ``previous`` (the same folder's
    older manifest) when no memory changed; a large folder reuses what its unchanged
    memories said about supersession."""
    total, has_index = conn.execute(
        "SELECT count(*) FILTER (WHERE kind = 'memory' AND error IS NULL), "
        "count(*) FILTER (WHERE filename = 'MEMORY.md') FROM files WHERE directory = ?",
        (directory,),
    ).fetchone()
    # A small folder reads MEMORY.md's hooks into its analyses (a large one does not).
    index_text = _index_text(conn, directory) if has_index and total <= LARGE_DIRECTORY else ""
    stamps = conn.execute(_MEMORY_STATE, (directory,)).fetchall()
    state = hash((tuple(map(tuple, stamps)), index_text))
    if (
        previous is not None
        and previous.state == state
        and previous.has_index_file == bool(has_index)
    ):
        return replace(previous, version=version)  # no memory changed
    manifest = Manifest(directory, version, [], bool(has_index), int(total), state=state)
    if manifest.large:
        started = time.perf_counter()
        manifest.relations = _large_relations(conn, manifest, previous, stamps)
        if previous is not None and previous.large:
            manifest.analyses = previous.analyses
        # A large folder's load is what its next select waits for: say what it cost.
        log.info(
            "select.large_folder_loaded",
            dir=directory,
            files=int(total),
            links_s=round(time.perf_counter() - started, 3),
        )
        return manifest
    rows = [
        queries.row_to_file(row)
        for row in conn.execute(
            f"SELECT {_COLUMNS} FROM files WHERE directory = ? AND kind = 'memory' "
            "AND error IS NULL ORDER BY filename",
            (directory,),
        )
    ]
    # MEMORY.md's line for a file is a second description: read into its analysis.
    hooks = index_hooks(index_text, [to_candidate(f) for f in rows]) if index_text else {}
    # A cached folder keeps no bodies: the links below read them once, and the
    # tool-doc rule needs only the body's command names.
    known = previous.signals if previous is not None else {}
    analysed = previous.analyses if previous is not None and not previous.large else {}
    everyone, signalled = [], []
    for f in rows:
        hook = hooks.get(f.filename, "")
        kept = _without_text(f, directory)
        manifest.files.append(kept)
        commands = commands_in(f.body)
        stamp = _stamp(f.mtime_ns, f.size, f.content_hash)
        doc = manifest.analysed(f, hook, analysed)
        c = to_candidate(f, doc, commands=commands, hook=hook)
        manifest.candidates.append(to_candidate(kept, doc, commands=commands, hook=hook))
        everyone.append(c)
        entry = _unchanged(known, f.filename, stamp) or (stamp, signals_of(c))
        manifest.signals[f.filename] = entry
        if (said := entry[1]) is not NO_SIGNALS:
            signalled.append((c, said))
    stale = superseded_from(signalled, everyone, quoted_only=False)
    manifest.headers = hash(
        tuple((c.filename, c.type, c.name, c.description, c.hook) for c in everyone)
    )
    twins = _twins_as_before(previous, manifest.headers, stale)
    heads = [] if twins is not None else [_header(c) for c in everyone]
    manifest.relations = Relations.of_folder(everyone, heads, stale, twins)
    return manifest


def _twins_as_before(
    previous: Manifest | None, headers: int, stale: dict[str, str | None]
) -> list[tuple[str, str]] | None:
    """The folder's near-duplicates as its previous version found them, if they still hold.

    They are read from headers alone and drop pairs where one supersedes the
    other: an edit that changed neither (a body grew a detail) leaves them as
    they were.
    """
    if previous is None or previous.large or previous.headers != headers:
        return None
    before = previous.relations
    return before.found_near_duplicates if before and before.superseded == stale else None


def _without_text(f: IndexedFile, directory: str) -> IndexedFile:
    """What a cached folder keeps of ``f``: no body nor hash, and the folder's one directory string.

    Field by field: :func:`dataclasses.replace` looks every field up again, for each of the
    folder's memories.
    """
    return IndexedFile(
        path=f.path,
        directory=directory,
        filename=f.filename,
        kind=KIND_MEMORY,
        name=f.name,
        description=f.description,
        type=f.type,
        body="",
        project=f.project,
        session=f.session,
        status=f.status,
        meta=f.meta,
        mtime_ns=f.mtime_ns,
        size=f.size,
        content_hash=None,
        error=f.error,
        warning=f.warning,
        secrets=f.secrets,
    )


def _header(c: Candidate) -> Header:
    """What the folder's near-duplicate links read of ``c`` (which carries its analysis)."""
    assert c.terms is not None
    return c.filename, c.type, c.terms.fields[NAME], c.terms.fields[DESC]


def _index_text(conn: sqlite3.Connection, directory: str) -> str:
    """The text of the folder's ``MEMORY.md`` as indexed ("" when it has none or it is unusable)."""
    row = conn.execute(
        "SELECT body FROM files WHERE directory = ? AND filename = ? AND error IS NULL",
        (directory, INDEX_FILENAME),
    ).fetchone()
    return str(row[0] or "") if row is not None else ""


def _stamp(mtime_ns: int, size: int, content_hash: str | None) -> int:
    """What tells an indexed memory's row from its earlier versions."""
    return hash((mtime_ns, size, content_hash))


def _unchanged(
    known: dict[str, tuple[int, Signals]], filename: str, stamp: int
) -> tuple[int, Signals] | None:
    """What ``filename`` said in the folder's previous version, if its row is the same."""
    kept = known.get(filename)
    return kept if kept is not None and kept[0] == stamp else None


def _large_relations(
    conn: sqlite3.Connection,
    manifest: Manifest,
    previous: Manifest | None,
    stamps: Sequence[sqlite3.Row],
) -> Relations:
    """Supersession for a large directory, from headers plus the few files that cite one.

    Near-duplicate links compare every pair, so large directories go without
    them; supersession needs only the files whose text carries one of the
    signal words (found through FTS5) and everyone's title. Plain words after
    "replaces" do not count here (only filenames, links and quoted titles), and
    "(current)" markers are not compared pairwise. The headers and what each of
    those files says are kept for the folder's next version, which reads again
    only the rows whose stamp (``stamps``: :data:`_MEMORY_STATE`) changed.
    """
    directory = manifest.directory
    before = previous.heads if previous is not None and previous.large else {}
    known = previous.signals if previous is not None else {}
    heads = manifest.heads
    changed = []
    for fn, content_hash, size, mtime_ns in stamps:
        stamp = _stamp(mtime_ns, size, content_hash)
        kept = before.get(fn)
        if kept is not None and kept[0] == stamp:
            heads[fn] = kept
        else:
            heads[fn] = (stamp, _NOT_READ)
            changed.append(fn)
    for row in _rows_named(conn, directory, changed, len(stamps)):
        heads[row[0]] = (heads[row[0]][0], _candidate(row))
    # Only the stamps first: a file whose row did not change keeps what it said.
    hits = conn.execute(
        REFERENCING,
        {"match": " OR ".join(SIGNAL_WORDS) + ' OR "no longer"', "dir": directory},
    ).fetchall()
    said: dict[str, tuple[int, Signals] | None] = {
        fn: _unchanged(known, fn, _stamp(mtime_ns, size, content_hash))
        for fn, mtime_ns, size, content_hash in hits
    }
    again = [fn for fn, kept in said.items() if kept is None]
    for row in _rows_named(conn, directory, again, len(stamps), body=True):
        said[row[0]] = (heads[row[0]][0], signals_of(_candidate(row)))
    found = manifest.signals
    for fn, kept in said.items():  # in filename order, as the links are worked out
        if kept is not None:
            found[fn] = kept
    headers = [c for _, c in heads.values() if c is not _NOT_READ]
    signalled = [(heads[fn][1], s) for fn, (_, s) in found.items() if s is not NO_SIGNALS]
    superseded = superseded_from(signalled, headers, quoted_only=True)
    return Relations(superseded=superseded, near_duplicates=[])


_HEADER_COLUMNS = "filename, name, description, type, {body}, mtime_ns"
_NOT_READ = Candidate("", "", "", None, "", 0.0)
"""Stands for a header not read yet (its row changed, or is read below)."""


def _rows_named(
    conn: sqlite3.Connection,
    directory: str,
    filenames: Sequence[str],
    total: int,
    *,
    body: bool = False,
) -> Iterator[sqlite3.Row]:
    """The header rows (with the body if ``body``) of ``filenames`` in ``directory``,
    the folder's whole list in one pass when they are most of its ``total`` memories."""
    columns = _HEADER_COLUMNS.format(body="body" if body else "NULL")
    where = "directory = ? AND kind = 'memory' AND error IS NULL"
    if not filenames:
        return
    if len(filenames) * 2 > total:
        wanted = set(filenames)
        for row in conn.execute(f"SELECT {columns} FROM files WHERE {where}", (directory,)):
            if row[0] in wanted:
                yield row
        return
    for start in range(0, len(filenames), 500):
        chunk = filenames[start : start + 500]
        marks = ", ".join("?" for _ in chunk)
        yield from conn.execute(
            f"SELECT {columns} FROM files WHERE {where} AND filename IN ({marks})",
            (directory, *chunk),
        )


def _candidate(row: tuple[str, str | None, str | None, str | None, str | None, int]) -> Candidate:
    """A candidate from ``filename, name, description, type, body, mtime_ns`` values.

    Missing headers read as the rankers see them (the filename's stem, empty text).
    """
    fn, name, desc, mtype, body, mtime_ns = row
    return Candidate(fn, name or PurePath(fn).stem, desc or "", mtype, body or "", mtime_ns / 1e9)


def candidates_for(
    conn: sqlite3.Connection, manifest: Manifest, query: str
) -> list[tuple[IndexedFile, Candidate]]:
    """The files a query is ranked over: all of a small directory, a BM25 slice of a big one."""
    if not manifest.large:
        return manifest.pool()
    match = fts_query(query)
    if match is None:
        return []
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM files_fts CROSS JOIN files ON files.rowid = files_fts.rowid "
        "WHERE files_fts MATCH ? AND files.directory = ? AND files.kind = 'memory' "
        "AND files.error IS NULL ORDER BY rank LIMIT ?",
        (match, manifest.directory, PREFILTER_LIMIT),
    )
    files = [queries.row_to_file(row) for row in rows]
    return [(f, to_candidate(f, manifest.analysed(f))) for f in files]
