"""What memoryd says about what memories cite: a memory's staleness verdict, and ``check``'s reply.

A verdict rides on a memory wherever one is shown (``list``, ``select``); the
reply of ``check`` gathers them per folder with the files found wrong. Only
:mod:`typing` is imported, like :mod:`memoryd.replies`.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

from memoryd.file_entries import FileWarning


class ChangedPath(TypedDict):
    """A cited path that commits changed after the memory was last written."""

    path: str
    commits: int
    newest: str


class Verdict(TypedDict):
    """Whether what a memory cites is still there in its checkout (``staleness``)."""

    checkout: str
    checkout_guessed: bool
    head: str | None
    cited: int
    missing: list[str]
    renamed: dict[str, str]
    changed_since: list[ChangedPath]
    all_gone: bool
    stale: bool


class CheckoutFound(TypedDict):
    """The checkout a memory folder's citations are checked against, or why there is none."""

    path: str | None
    source: str | None
    reason: str | None


class CheckedFolder(TypedDict):
    """A folder ``check`` covered: its checkout and how it was read (None: not checked)."""

    dir: str
    checkout: CheckoutFound
    mode: str | None


class CheckedMemory(TypedDict):
    """A citing memory, the paths it cites, and its verdict (None: no checkout)."""

    filename: str
    path: str
    citations: list[str]
    staleness: Verdict | None


class CheckFinding(TypedDict):
    """A file ``check`` found wrong in itself (not in what it cites), and what is wrong."""

    filename: str
    path: str
    problem: str


class CheckResult(TypedDict):
    """Each citing memory's verdict under a folder, how many are stale, and files found wrong."""

    dir: str
    folders: list[CheckedFolder]
    memories: list[CheckedMemory]
    citing: int
    stale: int
    findings: NotRequired[list[CheckFinding]]
    warnings: list[FileWarning]
