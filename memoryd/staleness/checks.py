"""Check a memory folder's code citations against its checkout, and store the verdicts.

Git runs in the caller's thread, never in a ``select``; reads use the caller's connection,
writes go through ``write``. A verdict is kept per (content hash, checkout HEAD); per checkout
the history is read once and extended, ``git ls-files`` reused until HEAD or the index moves.

A folder's checkout is, in order: its ``checkouts:`` entry in config.yaml; the ``cwd`` the
hook reported for it; the ``cwd`` in the newest Claude Code transcripts beside it; its name
decoded against the file system, when exactly one directory matches. Else the reason.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
from collections.abc import Callable, Mapping
from typing import NotRequired

from memoryd.bounded_read import read_capped
from memoryd.check_replies import (
    CheckedFolder,
    CheckedMemory,
    CheckoutFound,
    CheckResult,
    Verdict,
)
from memoryd.indexer.citations import KIND_NAME
from memoryd.indexer.queries import directory_version, under, under_args, warnings_under
from memoryd.staleness import results
from memoryd.staleness.git import GitUnavailable, History, head_of, ignored, tracked_files
from memoryd.staleness.verdicts import Snapshot, Tracked, judge

TRANSCRIPT_HEAD_BYTES = 64 * 1024
TRANSCRIPTS_READ = 5
MAX_DECODE_STEPS = 2_000
"""Directory listings a decode may make; a pathological name gives up, not hangs."""

SOURCE_CONFIG = "config"
SOURCE_HOOK = "hook"
SOURCE_TRANSCRIPT = "transcript"
SOURCE_FOLDER_NAME = "folder-name"

Write = Callable[[Callable[[sqlite3.Connection], None]], None]
"""Runs a function inside a write transaction (now, or later on the writer thread)."""


def _found(path: str | None, source: str | None = None, reason: str | None = None) -> CheckoutFound:
    return {"path": path, "source": source, "reason": reason}


def resolve(
    directory: str,
    configured: Mapping[str, str],
    conn: sqlite3.Connection,
    hint: str | None = None,
) -> CheckoutFound:
    """The checkout of memory folder ``directory``; ``hint`` is a hook ``cwd`` not yet stored."""
    if directory in configured:
        real = os.path.realpath(os.path.expanduser(configured[directory]))
        if not os.path.isdir(real):
            reason = f"configured checkout {configured[directory]} is not a directory"
            return _found(None, SOURCE_CONFIG, reason)
        return _found(real, SOURCE_CONFIG)
    if hint is None:
        row = conn.execute(
            "SELECT cwd FROM checkout_hints WHERE directory = ?", (directory,)
        ).fetchone()
        hint = None if row is None else row[0]
    if hint is not None and os.path.isdir(hint):
        return _found(hint, SOURCE_HOOK)
    project_dir = os.path.dirname(directory) if os.path.basename(directory) == "memory" else None
    if project_dir is not None:
        cwd = transcript_cwd(project_dir)
        if cwd is not None and os.path.isdir(cwd):
            return _found(os.path.realpath(cwd), SOURCE_TRANSCRIPT)
    name = os.path.basename(project_dir or directory)
    if not name.startswith("-"):
        return _found(
            None,
            reason="no checkout configured, reported by the hook or found in transcripts, "
            f"and the folder name {name!r} is not an encoded project path",
        )
    matches = decode_folder_name(name)
    if len(matches) == 1:
        return _found(matches[0], SOURCE_FOLDER_NAME)
    if not matches:
        return _found(None, reason=f"no existing directory matches the folder name {name!r}")
    shown = ", ".join(matches[:3])
    return _found(None, reason=f"the folder name {name!r} matches several paths: {shown}")


def transcript_cwd(project_dir: str) -> str | None:
    """The ``cwd`` in the newest readable transcript beside a memory folder."""
    try:
        entries = [e for e in os.scandir(project_dir) if e.name.endswith(".jsonl") and e.is_file()]
        entries.sort(key=lambda e: e.stat().st_mtime, reverse=True)
    except OSError:
        return None
    for entry in entries[:TRANSCRIPTS_READ]:
        try:
            head, _more = read_capped(entry.path, limit=TRANSCRIPT_HEAD_BYTES)
        except OSError:
            continue
        for line in head.decode("utf-8", errors="replace").splitlines():
            if '"cwd"' not in line:
                continue
            try:
                record = json.loads(line)
            except ValueError:
                continue
            cwd = record.get("cwd") if isinstance(record, dict) else None
            if isinstance(cwd, str) and cwd.startswith("/"):
                return cwd
    return None


def encode(path: str) -> str:
    """A path the way Claude Code names its project folder."""
    return re.sub(r"[^A-Za-z0-9-]", "-", path)


def decode_folder_name(name: str) -> list[str]:
    """Every existing directory whose encoded path equals ``name``."""
    found: list[str] = []
    steps = 0
    stack = [("/", name)]
    while stack and steps < MAX_DECODE_STEPS:
        base, rest = stack.pop()
        if not rest:
            found.append(base)
            continue
        steps += 1
        try:
            children = [e.name for e in os.scandir(base) if e.is_dir()]
        except OSError:
            continue
        for child in children:
            token = "-" + encode(child)
            if rest == token or rest.startswith(token + "-"):
                stack.append((os.path.join(base, child), rest[len(token) :]))
    return sorted(found)


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
        self.resolutions: dict[str, CheckoutFound] = {}
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

    def resolve(self, conn: sqlite3.Connection, directory: str) -> CheckoutFound:
        found = resolve(directory, self.configured, conn, self._hints.get(directory))
        if found["path"] is not None and not os.access(found["path"], os.R_OK | os.X_OK):
            found = _found(None, found["source"], f"checkout {found['path']} is not readable")
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
        """Check every citing memory of ``directory`` whose stored verdict is out of date;
        ``details`` adds every memory's verdict to the answer."""
        with self._lock:
            memories = self._citing(conn, directory)
            found = self.resolve(conn, directory)
            out: FolderCheck = {"dir": directory, "checkout": found, "mode": None}
            keys = results.checked_keys(conn, [m.path for m in memories])
            if found["path"] is None:
                if keys:
                    write(lambda c: results.drop_verdicts(c, list(keys)))
                out["memories"] = [_entry(m, None) for m in memories]
                out["stale"] = out["rechecked"] = 0
                return out
            snap, out["mode"] = self._snapshot(found["path"])
            snap.guessed = found["source"] == SOURCE_FOLDER_NAME
            # Without git there is no HEAD to key on; existence checks are cheap, so redo them.
            redo = force or snap.head is None
            todo = [m for m in memories if redo or keys.get(m.path) != (m.content_hash, snap.key)]
            tracked = snap.tracked
            if tracked is not None:  # cited paths git does not track may be ignored ones
                pending = {c.target for m in todo for c in m.citations if c.kind != KIND_NAME}
                untracked = sorted(t for t in pending if not tracked.has(t))
                snap.ignored = ignored(snap.checkout, untracked)
            fresh = {m.path: judge(m.citations, m.mtime, snap) for m in todo}
            # A verdict under a new key is new; one re-judged under the same key may be unchanged.
            same_key = [m.path for m in todo if keys.get(m.path) == (m.content_hash, snap.key)]
            known = results.verdicts_for(conn, [m.path for m in memories] if details else same_key)
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
        snap = Snapshot(top, head)
        try:
            snap.tracked = self._tracked(top, head)
        except GitUnavailable as exc:
            return Snapshot(top, None), f"{exc}; file system only"
        history = self._histories.setdefault(top, History())
        try:
            history.extend(top, head)
        except GitUnavailable as exc:
            self._histories.pop(top, None)
            return snap, f"{mode} (no history: {exc})"
        snap.history = history
        return snap, mode

    def _tracked(self, checkout: str, head: str) -> Tracked:
        try:
            index_mtime = os.stat(os.path.join(checkout, ".git", "index")).st_mtime_ns
        except OSError:
            index_mtime = 0
        cached = self._listings.get(checkout)
        if cached is not None and cached[0] == (head, index_mtime):
            return cached[1]
        listing = Tracked(tracked_files(checkout))
        self._listings[checkout] = ((head, index_mtime), listing)
        return listing


def citing_dirs(conn: sqlite3.Connection, root: str) -> list[str]:
    """Folders in or below ``root`` with at least one memory that cites code."""
    rows = conn.execute(
        "SELECT DISTINCT f.directory FROM citations c JOIN files f ON f.path = c.path "
        f"WHERE {under('f.directory')}",
        under_args(root),
    )
    return sorted(r[0] for r in rows)


def check_tree(
    checker: Checker, conn: sqlite3.Connection, directory: str, write: Write
) -> CheckResult:
    """``check``: re-check every citing folder in or below ``directory`` now, uncached."""
    reports = [checker.check_dir(conn, d, write, force=True) for d in citing_dirs(conn, directory)]
    if not reports:
        found = checker.resolve(conn, directory)
        reports = [FolderCheck(dir=directory, checkout=found, mode=None)]
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
