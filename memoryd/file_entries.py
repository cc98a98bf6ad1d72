"""The entries storage returns and replies carry: a file's error or warning, a scan's counts."""

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
    added: int
    updated: int
    removed: int
    unchanged: int
    errors: list[FileError]
    seconds: float
