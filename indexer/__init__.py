"""Memory files on disk to rows in SQLite: parser, scanner, store, incremental sync.

Public surface: :func:`parse_file` (never raises; errors are data),
:class:`IndexStore` (the one write connection), :func:`open_reader`,
:class:`Syncer` / :class:`SyncResult` (make the index equal to the disk), and
:class:`IndexedFile` (a row, as read by :mod:`memoryd.indexer.queries`).
"""

from memoryd.indexer.parse import parse_file
from memoryd.indexer.queries import IndexedFile
from memoryd.indexer.records import MEMORY_TYPES, FileStat, ParsedFile
from memoryd.indexer.store import IndexStore, open_reader
from memoryd.indexer.sync import Syncer, SyncResult

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
