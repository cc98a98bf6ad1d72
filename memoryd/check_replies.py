"""A memory's staleness verdict (on ``list`` and ``select`` entries) and ``check``'s reply."""

from __future__ import annotations

from typing import NotRequired, TypedDict

from memoryd.file_entries import FileWarning


class ChangedPath(TypedDict):
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
    dir: str
    checkout: CheckoutFound
    mode: str | None


class CheckedMemory(TypedDict):
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
    dir: str
    folders: list[CheckedFolder]
    memories: list[CheckedMemory]
    citing: int
    stale: int
    findings: NotRequired[list[CheckFinding]]
    warnings: list[FileWarning]
