"""A checkout's top folder is no memory folder, and dependency trees are never walked or watched.

A real daemon: ``select`` on a fake checkout (a README, ``node_modules`` full
of ``.md`` files, ``.git``, a virtualenv) does not make it a root; and a real
root holding such trees neither indexes nor watches them. The watches are
counted where the kernel keeps them: one ``inotify wd:`` line per watch in
the daemon's ``/proc/PID/fdinfo``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from daemon_fixtures import DaemonProc, wait_until, write_memory

from memoryd.indexer.scanner import is_memory_folder
from memoryd.indexer.store import IndexStore

PACKAGES = 40
HEADER = "---\ntitle: a package doc\n---\nSee the API.\n"


def fake_checkout(top: Path) -> None:
    """A project checkout: docs, dependencies with Markdown, VCS and a virtualenv."""
    top.mkdir(parents=True)
    (top / "README.md").write_text("# Project\n\nHow to build.\n")
    (top / "CHANGELOG.md").write_text("## 1.0\n- first\n")
    (top / "package.json").write_text("{}\n")
    for i in range(PACKAGES):
        pkg = top / "node_modules" / f"pkg{i}" / "docs"
        pkg.mkdir(parents=True)
        (pkg.parent / "README.md").write_text(HEADER)
        (pkg / f"guide{i}.md").write_text(HEADER)
    (top / ".git" / "objects" / "ab").mkdir(parents=True)
    (top / ".git" / "description.md").write_text(HEADER)
    env = top / "env" / "lib" / "python3.11" / "site-packages" / "pkg"
    env.mkdir(parents=True)
    (top / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (env / "README.md").write_text(HEADER)
    (top / "__pycache__").mkdir()


def inotify_watches(pid: int) -> int:
    """The inotify watches process ``pid`` holds, as the kernel lists them."""
    total = 0
    for fdinfo in Path(f"/proc/{pid}/fdinfo").iterdir():
        try:
            total += fdinfo.read_text().count("inotify wd:")
        except OSError:
            continue
    return total


def pid_of(d: DaemonProc) -> int:
    assert d.proc is not None
    return d.proc.pid


def listed(d: DaemonProc, folder: Path) -> set[str]:
    reply = d.call("list", {"dir": str(folder)})
    return {f["path"] for f in reply["files"]} | {e["path"] for e in reply["errors"]}


def test_a_readme_does_not_make_a_memory_folder(tmp_path: Path) -> None:
    fake_checkout(tmp_path / "co")
    assert not is_memory_folder(str(tmp_path / "co"))
    write_memory(tmp_path / "co" / "memory" / "feedback_x.md", "a memory")
    assert is_memory_folder(str(tmp_path / "co" / "memory"))
    (tmp_path / "idx").mkdir()
    (tmp_path / "idx" / "MEMORY.md").write_text("- [x](x.md)\n")
    assert is_memory_folder(str(tmp_path / "idx"))


def test_select_on_a_checkout_top_does_not_watch_it(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    d = make_daemon()
    top = tmp_path / "checkout"
    fake_checkout(top)
    write_memory(top / "memory" / "feedback_build.md", "How to build the project")
    before = inotify_watches(pid_of(d))
    reply = d.call("select", {"query": "how to build", "dir": str(top)})
    assert reply["selected"] == []
    assert reply["note"].startswith(f"{top} holds no memory files; did you mean {top / 'memory'}?")
    assert [r["path"] for r in d.call("status")["roots"]] == [str(d.roots[0])]
    assert inotify_watches(pid_of(d)) == before
    # Without a memory subfolder the note says why the folder is not one.
    bare = tmp_path / "bare"
    fake_checkout(bare)
    note = d.call("select", {"query": "how to build", "dir": str(bare)})["note"]
    assert "none of its 2 *.md file(s) opens with a '---' header" in note


def test_a_roots_dependency_trees_are_neither_indexed_nor_watched(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    root = tmp_path / "notes"
    fake_checkout(root)
    write_memory(root / "feedback_top.md", "a memory at the top")
    write_memory(root / "team" / "feedback_team.md", "a team memory")
    d = make_daemon(roots=[root])
    paths = listed(d, root)
    assert str(root / "team" / "feedback_team.md") in paths
    assert not [p for p in paths if "/node_modules/" in p or "/env/" in p or "/.git/" in p]
    # The root, team/ and nothing else: not node_modules, .git, env or __pycache__.
    assert inotify_watches(pid_of(d)) == 2

    # Dependencies installed while running: still neither watched nor indexed.
    late = root / "team" / "node_modules" / "late" / "docs"
    late.mkdir(parents=True)
    (late / "feedback_late.md").write_text(HEADER)
    venv = root / "team" / "venv2"
    venv.mkdir()
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "lib").mkdir()
    write_memory(venv / "lib" / "feedback_venv.md", "inside a virtualenv")
    write_memory(root / "team" / "feedback_marker.md", "written last")
    marker = str(root / "team" / "feedback_marker.md")
    wait_until(lambda: marker in listed(d, root), what="the marker indexed")
    d.call("reindex", {})
    paths = listed(d, root)
    assert not [p for p in paths if "/node_modules/" in p or "/venv2/" in p], paths
    # venv2 got its watch before pyvenv.cfg was there, as a new directory does; lib/ did not.
    assert inotify_watches(pid_of(d)) <= 3
    assert os.path.isdir(late)


def test_a_checkout_top_remembered_as_a_request_root_is_dropped_at_start(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    """A root an older daemon stored for a checkout's top is not watched again."""
    top = tmp_path / "checkout"
    fake_checkout(top)
    memories = tmp_path / "kept"
    write_memory(memories / "feedback_kept.md", "a real request root")
    d = make_daemon(start=False)
    d.db.parent.mkdir(parents=True, exist_ok=True)
    store = IndexStore(d.db)
    try:
        store.save_root(str(top), "request", time.time())
        store.save_root(str(memories), "request", time.time())
    finally:
        store.close()
    d.start()
    assert {r["path"] for r in d.call("status")["roots"]} == {str(d.roots[0]), str(memories)}
