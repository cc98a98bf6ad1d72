"""Read-only SQLite connections, one per request thread.

Readers never share the writer's connection: each thread lazily opens its own
``mode=ro`` connection and keeps it for its life, so concurrent requests read
in parallel under WAL while the writer commits.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from memoryd.indexer.store import open_reader


class Readers:
    def __init__(self, db_path: Path) -> None:
        self.db_path = db_path
        self._local = threading.local()

    def conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = open_reader(self.db_path)
            self._local.conn = conn
        return conn
