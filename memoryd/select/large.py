"""A folder too large to score whole: its FTS5 prefilter and its supersession links.

A query is ranked over the ``PREFILTER_LIMIT`` memories FTS5 ranks best. Links
come from every header and the files holding a signal word; a new version of
the folder reads again only the rows that changed.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import PurePath
from typing import Any

from memoryd._unicode_words import is_gram
from memoryd._unicode_words import words as unicode_words
from memoryd.indexer import queries
from memoryd.select._text import STOPWORDS
from memoryd.select.candidates import Candidate
from memoryd.select.relations import Relations
from memoryd.select.supersession import (
    NO_SIGNALS,
    SIGNAL_WORDS,
    Signals,
    signals_of,
    superseded_from,
)

LARGE_DIRECTORY = 300  # above this many memories, candidates come from the prefilter
PREFILTER_LIMIT = 150  # FTS5 orders memories otherwise than the ranker: a wide slice
REFERENCING = (
    "SELECT files.filename FROM files_fts CROSS JOIN files ON files.rowid = files_fts.rowid "
    "WHERE files_fts MATCH :match AND files.directory = :dir "
    "AND files.kind = 'memory' AND files.error IS NULL ORDER BY files.filename"
)
_WORD = re.compile(r"[A-Za-z0-9]+")
# A memory's stamp, its header (no body) and what its text says about supersession (None:
# not read).
Head = tuple[int, Candidate, Signals | None]
COLUMNS = ", ".join(f"files.{c}" for c in queries.FILE_FIELDS.values())


def fts_query(text: str) -> str | None:
    """An OR of the query's distinctive words (of any script; bigrams of unspaced ones),
    quoted so FTS5 syntax cannot leak in."""
    found = _WORD.findall(text) if text.isascii() else unicode_words(text)
    words = dict.fromkeys(w.lower() for w in found)
    terms = [w for w in words if w not in STOPWORDS and (len(w) > 1 or is_gram(w))]
    return " OR ".join(f'"{t}"' for t in terms[:64]) or None


def stamp_of(mtime_ns: int, size: int, content_hash: str | None) -> int:
    """What tells an indexed memory's row from its earlier versions."""
    return hash((mtime_ns, size, content_hash))


def heads_of(
    stamps: Iterable[Sequence[Any]], before: dict[str, Head]
) -> tuple[dict[str, Head], list[str]]:
    """Each memory of ``stamps`` (``filename, content_hash, size, mtime_ns`` rows) with its
    stamp and what was read of it kept from ``before`` if unchanged; and the names of the
    others."""
    heads: dict[str, Head] = {}
    changed = []
    for fn, content_hash, size, mtime_ns in stamps:
        stamp = stamp_of(mtime_ns, size, content_hash)
        kept = before.get(fn)
        if kept is not None and kept[0] == stamp:
            heads[fn] = kept
        else:
            heads[fn] = (stamp, _NOT_READ, None)
            changed.append(fn)
    return heads, changed


def relations(
    conn: sqlite3.Connection,
    directory: str,
    heads: dict[str, Head],
    changed: Sequence[str],
) -> Relations:
    """Supersession from every header and the texts holding a signal word (only filenames,
    links and quoted titles name a memory). The ``changed`` of ``heads`` and the texts not
    read yet are read here."""
    for row in _rows_named(conn, directory, changed, len(heads)):
        heads[row[0]] = (heads[row[0]][0], _candidate(row), None)
    match = {"match": " OR ".join(SIGNAL_WORDS) + ' OR "no longer"', "dir": directory}
    referring = [fn for (fn,) in conn.execute(REFERENCING, match)]
    again = [fn for fn in referring if heads[fn][2] is None]
    for row in _rows_named(conn, directory, again, len(heads), body=True):
        stamp, head, _ = heads[row[0]]
        heads[row[0]] = (stamp, head, signals_of(_candidate(row)))
    headers = [c for _, c, _ in heads.values() if c is not _NOT_READ]
    signalled = []
    for fn in referring:  # in filename order, as the links are worked out
        _, head, said = heads[fn]
        if said is not None and said is not NO_SIGNALS:
            signalled.append((head, said))
    superseded = superseded_from(signalled, headers, quoted_only=True)
    return Relations(superseded=superseded, near_duplicates=[])


_HEADER_COLUMNS = "filename, name, description, type, {body}, mtime_ns"
_NOT_READ = Candidate("", "", "", None, "", 0.0)  # a header not read yet


def _rows_named(
    conn: sqlite3.Connection,
    directory: str,
    filenames: Sequence[str],
    total: int,
    *,
    body: bool = False,
) -> Iterator[sqlite3.Row]:
    """The header rows (with the body if ``body``) of ``filenames``, in one pass over the
    folder when they are most of its ``total`` memories."""
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


def _candidate(row: Sequence[Any]) -> Candidate:
    """A candidate from ``filename, name, description, type, body, mtime_ns`` values."""
    fn, name, desc, mtype, body, mtime_ns = row
    return Candidate(fn, name or PurePath(fn).stem, desc or "", mtype, body or "", mtime_ns / 1e9)


def prefiltered(conn: sqlite3.Connection, directory: str, query: str) -> list[sqlite3.Row]:
    """The rows of the ``PREFILTER_LIMIT`` memories of ``directory`` that BM25 ranks best."""
    match = fts_query(query)
    if match is None:
        return []
    return conn.execute(
        f"SELECT {COLUMNS} FROM files_fts CROSS JOIN files ON files.rowid = files_fts.rowid "
        "WHERE files_fts MATCH ? AND files.directory = ? AND files.kind = 'memory' "
        "AND files.error IS NULL ORDER BY rank LIMIT ?",
        (match, directory, PREFILTER_LIMIT),
    ).fetchall()
