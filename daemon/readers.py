"""Read-only SQLite connections, one per request thread.

Readers never share the writer's connection: each thread lazily opens its own
``mode=ro`` connection and keeps it for its life, so concurrent requests read
in parallel under WAL while the writer commits. A connection's thread closes
it as it ends (:meth:`Readers.release`), so its descriptors are free at once.
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
        self._epoch = 0

    def reset(self) -> None:
        """The database file was replaced (rebuilt after damage): every thread reopens."""
        self._epoch += 1

    def release(self) -> None:
        """This thread is ending: its connection is closed now, not when it is collected."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            self._local.conn = None
            conn.close()

    def conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None and self._local.epoch != self._epoch:
            conn.close()  # this thread's own connection, to the file set aside
            conn = None
        if conn is None:
            conn = open_reader(self.db_path)
            self._local.conn, self._local.epoch = conn, self._epoch
        return conn
