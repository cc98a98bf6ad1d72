"""What quietly stopped working, in words: ``status``'s ``alarms``, which ``doctor`` repeats.

Kinds: ``hook`` (its last requests failed), ``selection`` (nothing selected for
a folder's last :data:`NOTHING_RUNS` selects), ``watcher`` (a root polled, gone,
its watcher dead or its events dropped), ``index`` (behind the disk). Every
check is bounded; an alarm that cannot be worked out is left out.
"""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from memoryd.indexer.queries import iso_utc
from memoryd.indexer.scanner import is_memory_filename
from memoryd.integrations._hook_state import HookFailures
from memoryd.paths import escaped
from memoryd.replies import Alarm

if TYPE_CHECKING:
    from memoryd.daemon.maintenance import Maintenance
    from memoryd.daemon.watcher import Watcher

NOTHING_RUNS = 20
RECENT_RUNS = 2000  # the newest selector_runs rows the selection alarm reads
SAMPLE_FILES = 200  # files of one root's own folder compared with the index, at most
GRACE_S = 10.0  # a file changed more recently may still be on its way into the index


def find(
    roots: list[str],
    watcher: Watcher,
    maintenance: Maintenance,
    reader: Callable[[], sqlite3.Connection] | None,
) -> list[Alarm]:
    """``status``'s ``alarms`` for ``roots``; the index's only with a ``reader`` (given once the
    first index is complete)."""
    found = hook_alarms() + _watchers(roots, watcher, maintenance)
    if reader is not None:
        try:
            conn = reader()
            found += _nothing_selected(conn)
            found += _index_behind(conn, roots, maintenance)
        except sqlite3.Error:
            pass  # the index's own trouble is in status's `index`
    return found


def _watchers(roots: list[str], watcher: Watcher, maintenance: Maintenance) -> list[Alarm]:
    out: list[Alarm] = []
    deaths = maintenance.watcher_deaths
    for root in roots:
        mode, note = watcher.mode_of(root)
        if mode == "polling":
            out.append(_alarm("watcher", f"{root} is polled, not watched with inotify: {note}"))
        elif mode == "missing":
            gone = f"{root} does not exist: nothing is watched there until it does"
            out.append(_alarm("watcher", gone))
        if root in deaths:
            count, at = deaths[root]
            out.append(
                _alarm(
                    "watcher",
                    f"the watcher of {root} died {count} time(s), last at {iso_utc(at)}; "
                    "it was restarted and the folder rescanned",
                )
            )
        recrawls = maintenance.recrawls.get(root)
        if recrawls is not None and recrawls.last.reason == "events-lost":
            out.append(
                _alarm(
                    "watcher",
                    f"the kernel dropped file events for {root} ({recrawls.count} time(s), "
                    f"last at {iso_utc(recrawls.last.at)}); it was rescanned",
                )
            )
    return out


def _index_behind(
    conn: sqlite3.Connection, roots: list[str], maintenance: Maintenance
) -> list[Alarm]:
    out: list[Alarm] = []
    last = maintenance.last_reconcile
    if last is not None and last.reason not in ("startup", "reindex") and last.drift:
        out.append(
            _alarm(
                "index",
                f"the last reconcile ({last.reason}, {iso_utc(last.at)}) found {last.drift} "
                "file(s) that differed from the index: the watcher had missed them",
            )
        )
    for root in roots:
        counts = _disk_vs_index(conn, root)
        if counts is None or not any(counts):
            continue
        new, changed, gone = counts
        out.append(
            _alarm(
                "index",
                f"the index is behind the disk in {root}: {new} file(s) not indexed, "
                f"{changed} changed since indexed, {gone} deleted but still indexed "
                f"(of its own files, changed over {GRACE_S:g} s ago); "
                "`memoryd reindex` catches up",
            )
        )
    return out


def _alarm(kind: str, message: str) -> Alarm:
    return {"kind": kind, "message": message}


def hook_alarms() -> list[Alarm]:
    """The hook's alarm, from its own record (``doctor`` reads it without a daemon too)."""
    message = HookFailures().message()
    return [] if message is None else [_alarm("hook", message)]


def _nothing_selected(conn: sqlite3.Connection) -> list[Alarm]:
    rows = conn.execute(
        "SELECT dir, at, selected_json, candidates, error FROM selector_runs "
        "WHERE dir IS NOT NULL ORDER BY at DESC LIMIT ?",
        (RECENT_RUNS,),
    ).fetchall()
    runs: dict[str, list[tuple[float, str, int, str | None]]] = {}
    for directory, at, selected, candidates, error in rows:
        kept = runs.setdefault(directory, [])
        if len(kept) < NOTHING_RUNS:
            kept.append((at, selected, candidates or 0, error))
    out: list[Alarm] = []
    for directory, kept in runs.items():
        if len(kept) < NOTHING_RUNS or not all(_empty(r[1]) and r[2] > 0 for r in kept):
            continue
        errors = [r[3] for r in kept if r[3]]
        why = f"; {len(errors)} of them failed (latest: {errors[0]})" if errors else ""
        out.append(
            _alarm(
                "selection",
                f"nothing was selected for the last {NOTHING_RUNS} prompts in {directory}, "
                f"which had up to {max(r[2] for r in kept)} memories to choose from "
                f"(from {iso_utc(kept[-1][0])} to {iso_utc(kept[0][0])}){why}: check that the "
                "memories' descriptions say when they apply, and the ranker in `memoryd status`",
            )
        )
    return out


def _empty(selected_json: str) -> bool:
    try:
        return not json.loads(selected_json or "[]")
    except ValueError:
        return False


def _disk_vs_index(conn: sqlite3.Connection, root: str) -> tuple[int, int, int] | None:
    """Files of ``root``'s own folder changed over :data:`GRACE_S` ago: (not in the index,
    changed since, deleted but indexed); None when the folder cannot be listed."""
    cutoff = time.time() - GRACE_S
    try:
        folder_settled = os.stat(root).st_mtime < cutoff
        with os.scandir(root) as listing:
            names = (e for e in listing if is_memory_filename(e.name))
            entries = list(itertools.islice(names, SAMPLE_FILES + 1))
        # keyed as the index keys them: a name that is not UTF-8 or holds a control, escaped
        on_disk = {
            escaped(e.name): e.stat(follow_symlinks=False)
            for e in entries[:SAMPLE_FILES]
            if e.is_file(follow_symlinks=False)
        }
    except OSError:
        return None
    marks = ",".join("?" * len(on_disk))
    query = "SELECT filename, mtime_ns, size FROM files WHERE directory = ? AND filename IN "
    indexed = {
        name: (mtime_ns, size)
        for name, mtime_ns, size in conn.execute(f"{query}({marks})", (root, *on_disk))
    }
    new = changed = 0
    for name, st in on_disk.items():
        if st.st_mtime >= cutoff:
            continue
        row = indexed.get(name)
        if row is None:
            new += 1
        elif row != (st.st_mtime_ns, st.st_size):
            changed += 1
    gone = 0
    if folder_settled and len(entries) <= SAMPLE_FILES:  # the whole folder was listed
        listed = {escaped(e.name) for e in entries}
        rows = conn.execute(
            "SELECT filename FROM files WHERE directory = ? LIMIT ?", (root, 2 * SAMPLE_FILES)
        )
        gone = sum(1 for (name,) in rows if name not in listed)
    return new, changed, gone
