"""What the index reports about its files, as JSON: the entries storage builds and replies carry.

Storage returns these shapes (a file's error or warning, a pass's counts) and
never imports the reply types; the replies of ``list``, ``index``/``reindex``
and ``check`` hold the same values, so both name them from here. Only
:mod:`typing` is imported.
"""

from __future__ import annotations

from typing import TypedDict


class FileError(TypedDict):
    """A file that is indexed but did not parse (or could not be read), and why."""

    path: str
    error: str


class FileWarning(TypedDict):
    """A file that is indexed and used, with a problem its author should fix."""

    path: str
    warning: str


class SyncCounts(TypedDict):
    """What a stat scan changed (``memoryd index``), and the parse errors under its folders."""

    added: int
    updated: int
    removed: int
    unchanged: int
    errors: list[FileError]
    seconds: float
