"""Folders named only by requests are a bounded cache, and every root shares the observers.

1,000 folders named by requests used to become 1,000 watched roots (2,134
threads, 127 of the user's 128 inotify instances), all back after a restart.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import structlog
from daemon_fixtures import DaemonProc, wait_until, write_memory

from memoryd.daemon.watcher import Watcher, inotify_budget


def request_roots(d: DaemonProc) -> list[str]:
    return [r["path"] for r in d.call("status")["roots"] if r["origin"] == "request"]


def test_request_roots_are_capped_least_recently_used_first(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    d = make_daemon(start=False)
    config = d.home / "config" / "memoryd" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("max_request_roots: 3\n")
    d.start()
    folders = [tmp_path / f"project{i}" / "memory" for i in range(6)]
    for i, folder in enumerate(folders):
        write_memory(folder / "feedback_a.md", f"memory of project {i}")
        d.call("list", {"dir": str(folder)})
        time.sleep(0.01)  # distinct last-use times
    assert request_roots(d) == [str(f) for f in folders[3:]]
    listing = d.call("list", {"dir": str(folders[0])})  # named again: watched again
    assert [f["filename"] for f in listing["files"]] == ["feedback_a.md"]
    assert request_roots(d) == [str(f) for f in (*folders[4:], folders[0])]
    assert "over max_request_roots" in d.log()
    d.stop()
    d.start()
    assert sorted(request_roots(d)) == sorted(str(f) for f in (*folders[4:], folders[0]))


def test_roots_share_one_observer_and_only_a_budget_uses_inotify(tmp_path: Path) -> None:
    structlog.reset_defaults()  # not a stream a CLI test in this process closed since
    seen: list[str] = []
    watcher = Watcher(lambda paths, listed: seen.extend(paths), inotify_watches=5)
    try:
        before = threading.active_count()
        roots = []
        for i in range(4):
            root = tmp_path / f"root{i}"
            (root / "sub").mkdir(parents=True)  # two directories: two inotify watches
            roots.append(str(root))
            watcher.add_root(str(root))
        modes = [watcher.modes[r] for r in roots]
        assert modes == ["inotify", "inotify", "polling", "polling"]
        assert "would take memoryd past 5 inotify watches (4 in use" in watcher.notes[roots[2]]
        # Two shared observers: a root costs watchdog's emitter threads, not an observer.
        assert len(watcher._shared) == 2
        assert threading.active_count() - before <= 2 + 2 * len(roots)
        target = write_memory(Path(roots[3]) / "feedback_polled.md", "seen by the polling one")
        wait_until(lambda: str(target) in seen, 10, "a change in a polled root")
        watcher.remove_root(roots[0])
        assert roots[0] not in watcher.modes and watcher.dead_roots() == []
    finally:
        watcher.stop()


def test_the_inotify_budget_leaves_half_the_watches_to_others(tmp_path: Path) -> None:
    limits = tmp_path / "max_user_watches"
    limits.write_text("8192\n")
    assert inotify_budget(str(limits)) == 4096
    assert inotify_budget(str(tmp_path / "missing")) == 4096
