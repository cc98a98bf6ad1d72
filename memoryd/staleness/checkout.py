"""Which checkout a memory folder belongs to, from the most certain source down.

Claude Code names a project's folder after its path with ``/`` and ``.``
(and other punctuation) turned into ``-``, so ``-home-me-my-app`` may be
``/home/me/my-app`` or ``/home/me/my/app``. Decoding is therefore the last
resort; before it come, in order:

1. a ``checkouts:`` entry for the folder in config.yaml;
2. the ``cwd`` the Claude Code hook reported with a prompt for this folder
   (remembered in the index, so it survives restarts);
3. the ``cwd`` recorded in Claude Code's transcripts next to the folder
   (``~/.claude/projects/<name>/*.jsonl``, newest first);
4. the folder name decoded against the file system, when exactly one
   existing directory matches.

When none applies the answer carries the reason instead of a path.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass

from memoryd.bounded_read import read_capped
from memoryd.replies import CheckoutFound

TRANSCRIPT_HEAD_BYTES = 64 * 1024
TRANSCRIPTS_READ = 5
MAX_DECODE_STEPS = 2_000
"""Directory listings a decode may make; a pathological name gives up, not hangs."""

SOURCE_CONFIG = "config"
SOURCE_HOOK = "hook"
SOURCE_TRANSCRIPT = "transcript"
SOURCE_FOLDER_NAME = "folder-name"


@dataclass(frozen=True)
class Resolution:
    """A checkout path with where it came from, or no path and the reason."""

    path: str | None
    source: str | None = None
    reason: str | None = None

    def to_json(self) -> CheckoutFound:
        return {"path": self.path, "source": self.source, "reason": self.reason}


def resolve(
    directory: str,
    configured: Mapping[str, str],
    conn: sqlite3.Connection,
    hint: str | None = None,
) -> Resolution:
    """The checkout of memory folder ``directory`` (see the module docstring for the order).

    ``hint`` is a hook ``cwd`` this process has seen but may not have stored yet.
    """
    if directory in configured:
        return _usable(configured[directory], SOURCE_CONFIG)
    if hint is None:
        row = conn.execute(
            "SELECT cwd FROM checkout_hints WHERE directory = ?", (directory,)
        ).fetchone()
        hint = None if row is None else row[0]
    if hint is not None and os.path.isdir(hint):
        return Resolution(hint, SOURCE_HOOK)
    project_dir = os.path.dirname(directory) if os.path.basename(directory) == "memory" else None
    if project_dir is not None:
        cwd = transcript_cwd(project_dir)
        if cwd is not None and os.path.isdir(cwd):
            return Resolution(os.path.realpath(cwd), SOURCE_TRANSCRIPT)
    name = os.path.basename(project_dir or directory)
    if not name.startswith("-"):
        return Resolution(
            None,
            reason="no checkout configured, reported by the hook or found in transcripts, "
            f"and the folder name {name!r} is not an encoded project path",
        )
    matches = decode_folder_name(name)
    if len(matches) == 1:
        return Resolution(matches[0], SOURCE_FOLDER_NAME)
    if not matches:
        return Resolution(None, reason=f"no existing directory matches the folder name {name!r}")
    shown = ", ".join(matches[:3])
    return Resolution(None, reason=f"the folder name {name!r} matches several paths: {shown}")


def _usable(path: str, source: str) -> Resolution:
    real = os.path.realpath(os.path.expanduser(path))
    if not os.path.isdir(real):
        return Resolution(None, source, f"configured checkout {path} is not a directory")
    if not os.access(real, os.R_OK | os.X_OK):
        return Resolution(None, source, f"configured checkout {path} is not readable")
    return Resolution(real, source)


def transcript_cwd(project_dir: str) -> str | None:
    """The ``cwd`` in the newest readable transcript beside a memory folder."""
    try:
        entries = [e for e in os.scandir(project_dir) if e.name.endswith(".jsonl") and e.is_file()]
        entries.sort(key=lambda e: e.stat().st_mtime, reverse=True)
    except OSError:
        return None
    for entry in entries[:TRANSCRIPTS_READ]:
        cwd = _cwd_in(entry.path)
        if cwd is not None:
            return cwd
    return None


def _cwd_in(path: str) -> str | None:
    try:
        data, _more = read_capped(path, limit=TRANSCRIPT_HEAD_BYTES)
        head = data.decode("utf-8", errors="replace")
    except OSError:
        return None
    for line in head.splitlines():
        if '"cwd"' not in line:
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        cwd = entry.get("cwd") if isinstance(entry, dict) else None
        if isinstance(cwd, str) and cwd.startswith("/"):
            return cwd
    return None


def encode(path: str) -> str:
    """A path the way Claude Code names its project folder."""
    return re.sub(r"[^A-Za-z0-9-]", "-", path)


def decode_folder_name(name: str, root: str = "/") -> list[str]:
    """Every existing directory whose encoded path equals ``name``."""
    found: list[str] = []
    steps = 0
    stack = [(root, name)]
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
