"""Run the checks for a memory folder and store the verdicts; shared by daemon and CLI.

Reading (the folder's citing memories, stored verdicts) goes through whatever
connection the caller reads with; writing goes through a ``write`` callback,
which in the daemon is a job for the single writer thread. git runs here, in
the caller's thread (the daemon's background checker, or ``memoryd check``),
never in a ``select``.

A verdict is cached per (memory content hash, checkout HEAD): a pass where
neither changed runs ``git rev-parse`` once per checkout and writes nothing.
Per checkout the git history is read once and then extended by the new
commits only, and ``git ls-files`` is reused until HEAD or git's index file
changes.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Mapping
from typing import NotRequired

from memoryd.indexer.queries import directory_version, warnings_under
from memoryd.replies import CheckedFolder, CheckedMemory, CheckResult, Verdict
from memoryd.staleness import results
from memoryd.staleness.checkout import SOURCE_FOLDER_NAME, Resolution, resolve
from memoryd.staleness.git import GitUnavailable, History, head_of, ignored, tracked_files
from memoryd.staleness.verdicts import Snapshot, Tracked, judge

Write = Callable[[Callable[[sqlite3.Connection], None]], None]
"""Runs a function inside a write transaction (now, or later on the writer thread)."""


class FolderCheck(CheckedFolder):
    """One folder's pass: its memories and stale count only with ``details``."""

    memories: NotRequired[list[CheckedMemory]]
    stale: NotRequired[int]
    rechecked: NotRequired[int]


class Checker:
    """Checkout resolutions, git listings and histories, kept between passes."""

    def __init__(self, configured: Mapping[str, str] | None = None) -> None:
        self.configured: dict[str, str] = {}
        self.configure(configured or {})
        self.resolutions: dict[str, Resolution] = {}
        self._histories: dict[str, History] = {}
        self._listings: dict[str, tuple[tuple[str, int], Tracked]] = {}
        self._hints: dict[str, str] = {}
        self._memories: dict[str, tuple[int, list[results.CitingMemory]]] = {}
        self._lock = threading.Lock()

    def configure(self, configured: Mapping[str, str]) -> None:
        """The config's ``checkouts:`` (memory folder -> checkout), e.g. after SIGHUP."""
        self.configured = {
            os.path.realpath(os.path.expanduser(k)): v for k, v in configured.items()
        }

    def resolve(self, conn: sqlite3.Connection, directory: str) -> Resolution:
        found = resolve(directory, self.configured, conn, self._hints.get(directory))
        if found.path is not None and not os.access(found.path, os.R_OK | os.X_OK):
            found = Resolution(None, found.source, f"checkout {found.path} is not readable")
        self.resolutions[directory] = found
        return found

    def note_cwd(self, directory: str, cwd: str, write: Write) -> bool:
        """Remember the hook's working directory for ``directory``; True when it is new."""
        if self._hints.get(directory) == cwd or not os.path.isdir(cwd):
            return False
        self._hints[directory] = cwd
        write(lambda conn: results.remember_cwd(conn, directory, cwd))
        return True

    def check_dir(
        self,
        conn: sqlite3.Connection,
        directory: str,
        write: Write,
        *,
        force: bool = False,
        details: bool = True,
    ) -> FolderCheck:
        """Check every citing memory of ``directory`` whose cached verdict is out of date.

        ``details`` adds every memory's verdict to the answer (``check``); the
        background pass leaves it out, since reading 500 stored verdicts would
        cost more than re-judging the one memory that changed.
        """
        with self._lock:
            return self._check(conn, directory, write, force, details)

    def _check(
        self, conn: sqlite3.Connection, directory: str, write: Write, force: bool, details: bool
    ) -> FolderCheck:
        memories = self._citing(conn, directory)
        found = self.resolve(conn, directory)
        out: FolderCheck = {"dir": directory, "checkout": found.to_json(), "mode": None}
        keys = results.checked_keys(conn, [m.path for m in memories])
        if found.path is None:
            if keys:
                write(lambda c: results.drop_verdicts(c, list(keys)))
            out["memories"] = [_entry(m, None) for m in memories]
            out["stale"] = out["rechecked"] = 0
            return out
        snap, out["mode"] = self._snapshot(found.path)
        snap.guessed = found.source == SOURCE_FOLDER_NAME
        # Without git there is no HEAD to key on; existence checks are cheap, so redo them.
        redo = force or snap.head is None
        todo = [m for m in memories if redo or keys.get(m.path) != (m.content_hash, snap.key)]
        if snap.tracked is not None:
            pending = sorted({t for m in todo for t in snap.untracked(m.citations)})
            snap.ignored = ignored(snap.checkout, pending)
        fresh = {m.path: judge(m.citations, m.mtime, snap) for m in todo}
        # A verdict under a new key is new; one re-judged under the same key may be unchanged.
        same_key = [m.path for m in todo if keys.get(m.path) == (m.content_hash, snap.key)]
        wanted = [m.path for m in memories] if details else same_key
        known = results.verdicts_for(conn, wanted)
        rows = [
            (m.path, m.content_hash, snap.key, fresh[m.path])
            for m in todo
            if known.get(m.path) != fresh[m.path]
        ]
        if rows:
            write(lambda c: results.save_verdicts(c, rows))
        out["rechecked"] = len(fresh)
        if details:
            verdicts = {**known, **fresh}
            out["memories"] = [_entry(m, verdicts.get(m.path)) for m in memories]
            out["stale"] = sum(1 for v in verdicts.values() if v["stale"])
        return out

    def _citing(self, conn: sqlite3.Connection, directory: str) -> list[results.CitingMemory]:
        """The folder's citing memories, re-read only when the folder's version moved."""
        version = directory_version(conn, directory)
        cached = self._memories.get(directory)
        if cached is not None and cached[0] == version and version:
            return cached[1]
        memories = results.citing_memories(conn, directory)
        self._memories[directory] = (version, memories)
        return memories

    def _snapshot(self, checkout: str) -> tuple[Snapshot, str]:
        """What the checkout holds now, and in words how it was read."""
        found = head_of(checkout)
        if found is None:
            return Snapshot(checkout, None), "not a git repository: file system only"
        top, head = found
        mode = "git" if top == checkout else f"git, from the top of the repository {top}"
        checkout = top
        snap = Snapshot(checkout, head)
        try:
            snap.tracked = self._tracked(checkout, head)
        except GitUnavailable as exc:
            return Snapshot(checkout, None), f"{exc}; file system only"
        history = self._histories.setdefault(checkout, History())
        try:
            history.extend(checkout, head)
        except GitUnavailable as exc:
            self._histories.pop(checkout, None)
            return snap, f"{mode} (no history: {exc})"
        snap.history = history
        return snap, mode

    def _tracked(self, checkout: str, head: str) -> Tracked:
        try:
            index_mtime = os.stat(os.path.join(checkout, ".git", "index")).st_mtime_ns
        except OSError:
            index_mtime = 0
        key = (head, index_mtime)
        cached = self._listings.get(checkout)
        if cached is not None and cached[0] == key:
            return cached[1]
        listing = Tracked(tracked_files(checkout))
        self._listings[checkout] = (key, listing)
        return listing


def citing_dirs(conn: sqlite3.Connection, root: str) -> list[str]:
    """Folders in or below ``root`` with at least one memory that cites code."""
    rows = conn.execute(
        "SELECT DISTINCT f.directory FROM citations c JOIN files f ON f.path = c.path "
        "WHERE f.directory = ? OR (f.directory >= ? AND f.directory < ?)",
        (root, root + "/", root + "0"),
    )
    return sorted(r[0] for r in rows)


def check_tree(
    checker: Checker, conn: sqlite3.Connection, directory: str, write: Write
) -> CheckResult:
    """``check``: re-check every citing folder in or below ``directory`` now, uncached."""
    reports = [checker.check_dir(conn, d, write, force=True) for d in citing_dirs(conn, directory)]
    if not reports:
        found = checker.resolve(conn, directory)
        reports = [FolderCheck(dir=directory, checkout=found.to_json(), mode=None)]
    memories = [m for r in reports for m in r.get("memories", [])]
    return {
        "dir": directory,
        "folders": [
            {"dir": r["dir"], "checkout": r["checkout"], "mode": r["mode"]} for r in reports
        ],
        "memories": memories,
        "citing": len(memories),
        "stale": sum(1 for m in memories if m["staleness"] and m["staleness"]["stale"]),
        "warnings": warnings_under(conn, directory),
    }


def _entry(memory: results.CitingMemory, verdict: Verdict | None) -> CheckedMemory:
    return {
        "filename": memory.filename,
        "path": memory.path,
        "citations": [c.target for c in memory.citations],
        "staleness": verdict,
    }
