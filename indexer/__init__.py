"""Memory files on disk to rows in SQLite: parser, scanner, store, incremental sync.

Public surface: :func:`parse_file` (never raises; errors are data),
:class:`IndexStore` (the one write connection), :func:`open_reader`,
:class:`Syncer` / :class:`SyncResult` (make the index equal to the disk), and
:class:`IndexedFile` (a row, as read by :mod:`memoryd.indexer.queries`).

The names are imported on first use (PEP 562): the Claude Code hook redacts
credentials with :mod:`memoryd.indexer.secrets` (pure ``re``) and must not
load SQLite, sqlite-utils and YAML by importing this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memoryd._lazy import lazy_getattr

if TYPE_CHECKING:
    from memoryd.indexer.parse import parse_file
    from memoryd.indexer.queries import IndexedFile
    from memoryd.indexer.records import MEMORY_TYPES, FileStat, ParsedFile
    from memoryd.indexer.store import IndexStore, open_reader
    from memoryd.indexer.sync import Syncer, SyncResult

_HOMES = {
    "parse_file": "parse",
    "IndexedFile": "queries",
    "MEMORY_TYPES": "records",
    "FileStat": "records",
    "ParsedFile": "records",
    "IndexStore": "store",
    "open_reader": "store",
    "Syncer": "sync",
    "SyncResult": "sync",
}


__getattr__ = lazy_getattr(__name__, _HOMES)

__all__ = [
    "MEMORY_TYPES",
    "FileStat",
    "IndexStore",
    "IndexedFile",
    "ParsedFile",
    "SyncResult",
    "Syncer",
    "open_reader",
    "parse_file",
]
