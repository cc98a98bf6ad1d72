"""Every kind of file change ends with the daemon's index equal to the disk."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

from daemon_fixtures import DaemonProc, wait_until, write_memory

from memoryd.indexer.scanner import is_memory_filename


def disk_files(root: Path) -> set[str]:
    found: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        found.update(os.path.join(dirpath, f) for f in filenames if is_memory_filename(f))
    return found


def indexed(d: DaemonProc, root: Path) -> dict[str, str | None]:
    listing = d.call("list", {"dir": str(root)})
    out = {f["path"]: f["description"] for f in listing["files"]}
    out.update({e["path"]: None for e in listing["errors"]})
    return out


def converges(d: DaemonProc, root: Path, expect: dict[str, str | None] | None = None) -> None:
    """Wait until the index lists exactly the files on disk (and the expected descriptions)."""

    def ok() -> bool:
        got = indexed(d, root)
        if set(got) != disk_files(root):
            return False
        return expect is None or all(got.get(k) == v for k, v in expect.items())

    wait_until(ok, timeout=5, what="index == disk")


def test_create_modify_delete(daemon: DaemonProc) -> None:
    root = daemon.roots[0]
    f = write_memory(root / "feedback_a.md", "first version")
    converges(daemon, root, {str(f): "first version"})
    write_memory(f, "second version")
    converges(daemon, root, {str(f): "second version"})
    f.unlink()
    converges(daemon, root)
    assert indexed(daemon, root) == {}


def test_atomic_save_via_rename(daemon: DaemonProc) -> None:
    root = daemon.roots[0]
    target = write_memory(root / "project_x.md", "before")
    converges(daemon, root)
    tmp = write_memory(root / ".project_x.md.tmp123", "after atomic save")
    os.replace(tmp, target)
    converges(daemon, root, {str(target): "after atomic save"})


def test_vim_style_save_and_editor_temp_files(daemon: DaemonProc) -> None:
    root = daemon.roots[0]
    target = write_memory(root / "user_role.md", "original")
    converges(daemon, root)
    # vim: write a probe file "4913", rename the original to a backup, write anew.
    (root / "4913").write_text("")
    (root / "4913").unlink()
    swap = root / ".user_role.md.swp"
    swap.write_bytes(b"\x00binary swap")
    os.rename(target, root / "user_role.md~")
    write_memory(target, "rewritten by vim")
    (root / "user_role.md~").unlink()
    (root / ".goutputstream-ABC123").write_text("gedit temp")
    converges(daemon, root, {str(target): "rewritten by vim"})
    assert set(indexed(daemon, root)) == {str(target)}


def test_directory_moved_in_with_files_and_deleted(daemon: DaemonProc, tmp_path: Path) -> None:
    root = daemon.roots[0]
    outside = tmp_path / "staging" / "proj" / "memory"
    for i in range(5):
        write_memory(outside / f"feedback_{i}.md", f"moved memory {i}")
    shutil.move(str(tmp_path / "staging" / "proj"), root / "proj")
    converges(daemon, root)
    assert len(indexed(daemon, root)) == 5
    made = root / "fresh" / "deep"
    made.mkdir(parents=True)
    write_memory(made / "reference_tool.md", "created inside a new folder")
    converges(daemon, root)
    shutil.rmtree(root / "proj")
    converges(daemon, root)
    assert set(indexed(daemon, root)) == {str(made / "reference_tool.md")}


def test_rename_between_folders(daemon: DaemonProc) -> None:
    root = daemon.roots[0]
    a = write_memory(root / "a" / "feedback_one.md", "travelling memory")
    (root / "b").mkdir()
    converges(daemon, root)
    os.rename(a, root / "b" / "feedback_one.md")
    converges(daemon, root, {str(root / "b" / "feedback_one.md"): "travelling memory"})


def test_broken_file_is_listed_with_reason_and_fixed_later(daemon: DaemonProc) -> None:
    root = daemon.roots[0]
    bad = root / "feedback_bad.md"
    bad.write_text("---\nname: x\ndescription: [unclosed\n---\n")
    converges(daemon, root)
    errors = daemon.call("list", {"dir": str(root)})["errors"]
    assert errors[0]["path"] == str(bad) and "YAML syntax error" in errors[0]["error"]
    write_memory(bad, "fixed now")
    converges(daemon, root, {str(bad): "fixed now"})


def test_reconcile_repairs_and_counts_drift(daemon: DaemonProc) -> None:
    """Lost events are simulated by deleting a row behind the daemon's back."""
    root = daemon.roots[0]
    kept = write_memory(root / "feedback_seen.md", "seen by the watcher")
    converges(daemon, root)
    with sqlite3.connect(daemon.db) as conn:
        conn.execute("DELETE FROM files WHERE path = ?", (str(kept),))
    assert indexed(daemon, root) == {}
    result = daemon.call("reindex", {})
    assert result["added"] == 1
    status = daemon.call("status")
    assert status["last_reconcile"]["reason"] == "reindex"
    assert status["last_reconcile"]["drift"] == 1
    assert status["drift_fixed_total"] == 1
    assert status["roots"][0]["files"] == 1
    converges(daemon, root, {str(kept): "seen by the watcher"})


def test_huge_binary_and_undecodable_files_are_reported_and_serving_goes_on(
    daemon: DaemonProc,
) -> None:
    root = daemon.roots[0]
    good = write_memory(root / "feedback_ok.md", "a healthy memory")
    huge = root / "reference_dump.md"
    huge.write_bytes(
        b'---\nname: dump\ndescription: "a pasted log"\ntype: reference\n---\n' + b"x" * (5 << 20)
    )
    (root / "project_blob.md").write_bytes(b"---\x00\x01binary")
    (root / "user_latin1.md").write_bytes("---\ndescription: caf\xe9\n---\n".encode("latin-1"))
    converges(daemon, root)
    listing = daemon.call("list", {"dir": str(root)})
    errors = {Path(e["path"]).name: e["error"] for e in listing["errors"]}
    assert "NUL byte" in errors["project_blob.md"]
    assert "not valid UTF-8" in errors["user_latin1.md"]
    dump = next(f for f in listing["files"] if f["filename"] == "reference_dump.md")
    assert "only its first 64 KiB were read" in dump["warning"]
    assert {f["path"] for f in listing["files"]} == {str(good), str(huge)}
    assert daemon.call("status")["roots"][0]["errors"] == 2


def test_a_deleted_root_is_emptied_then_watched_again_when_it_returns(
    daemon: DaemonProc,
) -> None:
    root = daemon.roots[0]
    write_memory(root / "feedback_keep.md", "before the folder went away")
    converges(daemon, root)
    shutil.rmtree(root)

    def root_status() -> dict[str, object]:
        return daemon.call("status")["roots"][0]  # type: ignore[no-any-return]

    # The observer dies with its directory; the periodic check recrawls.
    wait_until(lambda: root_status()["watcher"] == "missing", timeout=15, what="missing root")
    assert root_status()["files"] == 0
    back = write_memory(root / "feedback_back.md", "the folder is back")
    daemon.call("reindex", {})
    assert root_status()["watcher"] in ("inotify", "polling")
    converges(daemon, root, {str(back): "the folder is back"})
    later = write_memory(root / "feedback_later.md", "seen by the new observer")
    converges(daemon, root, {str(later): "seen by the new observer"})
