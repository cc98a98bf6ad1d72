"""The daemon keeps seeing the disk: lost events, swapped root folders, refused reloads, progress.

An inotify queue overflow and a root folder replaced under the daemon each
rescan that root at once (``status``: ``recrawls``); a SIGHUP naming ``/`` is
refused whole, the running roots kept; the first index's progress covers
every root and moves file by file.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from daemon_fixtures import DaemonProc, composed, wait_until, write_memory
from watchdog.events import EventsLostEvent

from memoryd.config import Config
from memoryd.daemon.compose import Parts
from memoryd.indexer.records import Delete


def _indexed(parts: Parts, folder: Path) -> set[str]:
    return parts.writer.call(lambda s: set(s.paths_in(str(folder))))


def _listed(d: DaemonProc, folder: Path) -> set[str]:
    return {os.path.basename(f["path"]) for f in d.call("list", {"dir": str(folder)})["files"]}


def _root(d: DaemonProc) -> dict[str, Any]:
    roots: list[dict[str, Any]] = d.call("status")["roots"]
    return roots[0]


def test_lost_events_rescan_the_root_at_once(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    kept = write_memory(root / "feedback_kept.md", "indexed, then its row lost")
    cfg = Config(socket=tmp_path / "s.sock", state_dir=tmp_path, db=tmp_path / "index.db")
    with composed(cfg) as parts:
        parts.roots.add(str(root), "serve", index=True)
        assert _indexed(parts, root) == {str(kept)}
        # What the lost events would have said never reaches the index.
        parts.writer.call(lambda s: s.apply([Delete(str(kept))]))
        assert _indexed(parts, root) == set()
        # The kernel's overflow, as watchdog's inotify emitter queues it for each watch.
        observer, watch = parts.watcher._watches[str(root)]
        emitter = next(e for e in observer.emitters if e.watch == watch)
        emitter.queue_event(EventsLostEvent(str(root), is_directory=True))

        def rescanned() -> bool:
            parts.maintenance.check_observers()  # the scheduler's job, every second
            return _indexed(parts, root) == {str(kept)}

        wait_until(rescanned, 10, "the root rescanned")
        recrawls = parts.maintenance.recrawls[str(root)]
        assert (recrawls.count, recrawls.last.reason) == (1, "events-lost")
        wait_until(lambda: recrawls.last.drift == 1, 10, "the rescan's drift")


def test_a_root_folder_swapped_under_the_daemon_is_watched_again(daemon: DaemonProc) -> None:
    root = daemon.roots[0]
    write_memory(root / "feedback_old_a.md", "in the old folder")
    write_memory(root / "feedback_old_b.md", "in the old folder too")
    wait_until(lambda: _listed(daemon, root) == {"feedback_old_a.md", "feedback_old_b.md"}, 10)
    root.rename(root.with_name("memory.bak"))
    root.mkdir()
    write_memory(root / "feedback_new.md", "in the new folder")
    wait_until(lambda: _listed(daemon, root) == {"feedback_new.md"}, 15, "the new folder indexed")
    status = _root(daemon)
    assert status["files"] == 1 and status["watcher"] == "inotify"
    assert status["recrawls"] >= 1 and status["last_recrawl"]["reason"] == "root-replaced"
    assert '"watcher.recrawl"' in daemon.log()
    # The new folder itself is watched: a file written now arrives as an event.
    write_memory(root / "feedback_later.md", "seen by the new watch")
    wait_until(lambda: "feedback_later.md" in _listed(daemon, root), 10, "the new watch's event")
    # Deleted and made again (a new inode): the same.
    for path in root.iterdir():
        path.unlink()
    root.rmdir()
    root.mkdir()
    write_memory(root / "feedback_third.md", "in the third folder")
    wait_until(lambda: _listed(daemon, root) == {"feedback_third.md"}, 15, "the third folder")
    # Moved away for good: the root is missing and empty, not watching the moved folder.
    root.rename(root.with_name("memory.gone"))
    wait_until(lambda: _root(daemon)["watcher"] == "missing", 15, "the root missing")
    assert _root(daemon)["files"] == 0


def test_a_reload_naming_slash_keeps_the_running_roots(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    keep = tmp_path / "keep"
    write_memory(keep / "user_a.md", "kept root memory", mtype="user")
    config = tmp_path / "config.yaml"
    config.write_text(f"roots: [{keep}]\n")
    d = make_daemon(roots=[], start=False, extra_args=["--config", str(config)])
    d.start()
    assert d.proc is not None
    config.write_text("roots: [/]\n")
    d.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: '"daemon.reload' in d.log(), 15, "the reload")
    status = d.call("status")
    assert [(r["path"], r["files"]) for r in status["roots"]] == [(str(keep), 1)]
    assert status["last_reload"]["applied"] is False
    assert "refusing /: / is too broad" in status["last_reload"]["reason"]
    assert '"daemon.reload_failed"' in d.log() and '"daemon.root_forgotten"' not in d.log()
    # A good file afterwards is applied, and says so.
    config.write_text(f"roots: [{keep}]\nsettle_ms: 10\n")
    d.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: d.call("status")["last_reload"]["applied"], 15, "the second reload")
    assert [r["path"] for r in d.call("status")["roots"]] == [str(keep)]


def test_indexing_progress_covers_every_root_file_by_file(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    small, big = tmp_path / "a-small", tmp_path / "b-big"
    for i in range(3):
        write_memory(small / f"feedback_{i}.md", f"small root memory {i}")
    big.mkdir()
    for i in range(4000):  # one directory: progress used to move once per directory
        (big / f"feedback_{i}.md").write_text(f"---\ndescription: tiny {i}\n---\nbody {i}\n")
    d = make_daemon(roots=[small, big], start=False)
    d.start(wait=False)
    seen: list[dict[str, Any]] = []
    wait_until(d.socket.exists, 20, "the socket")
    wait_until(lambda: _poll(d, seen), 60, "ready")
    during = [p for p in seen if p["phase"] == "indexing"]
    assert during, seen
    assert {p["total"] for p in seen} == {4003}
    dones = [p["done"] for p in seen]
    assert dones == sorted(dones)
    # The second root's files were counted while they were indexed, not all at its end.
    assert any(3 < p["done"] < 4003 for p in during), during
    assert seen[-1] == {**seen[-1], "phase": "done", "done": 4003}
    logged = [json.loads(line) for line in d.log().splitlines() if '"index.progress"' in line]
    assert logged and {line["total"] for line in logged} == {4003}


def _poll(d: DaemonProc, seen: list[dict[str, Any]]) -> bool:
    """One connection polling ``status`` until the daemon is ready; each progress kept."""
    try:
        with d.client(timeout=5) as c:
            while True:
                status = c.status()
                if status["indexing"] is not None:
                    seen.append(dict(status["indexing"]))
                if status["state"] == "ready":
                    return True
    except OSError:
        return False
