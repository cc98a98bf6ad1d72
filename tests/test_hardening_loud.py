"""Loud failure: ``status`` (text and JSON) and ``doctor`` say what quietly stopped working.

Each condition is made for real against a real daemon: hook requests that
fail, selects that choose nothing, a root whose folder is gone, an index that
disagrees with the disk. The watcher's fallback to polling and its death
cannot be caused from outside the daemon, so those run over the daemon's
own parts in this process.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from daemon_fixtures import DaemonProc, composed, wait_until, write_memory

from memoryd.config import Config
from memoryd.daemon import alarms
from memoryd.daemon.alarms import NOTHING_RUNS
from memoryd.daemon.index import Readers
from memoryd.replies import Alarm

HOUR_AGO = time.time() - 3600


def cli(d: DaemonProc, *argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memoryd", *argv],
        env=d.env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def shown(d: DaemonProc) -> tuple[dict[str, list[str]], str, str]:
    """Alarms by kind from ``status --json``, then ``status``'s text and ``doctor``'s."""
    reply = json.loads(cli(d, "status", "--json", "--socket", str(d.socket)).stdout)
    kinds: dict[str, list[str]] = {}
    for alarm in reply["alarms"]:
        kinds.setdefault(alarm["kind"], []).append(alarm["message"])
    text = cli(d, "status", "--socket", str(d.socket)).stdout
    doctor = cli(d, "doctor", "--socket", str(d.socket)).stdout
    return kinds, text, doctor


def settled_folder(root: Path, names: list[str]) -> Path:
    """A memory folder whose files and listing last changed an hour ago."""
    for name in names:
        path = write_memory(root / name, f"how to {name[:-3]} the deploy", body="Run it.")
        os.utime(path, (HOUR_AGO, HOUR_AGO))
    os.utime(root, (HOUR_AGO, HOUR_AGO))
    return root


def test_a_healthy_daemon_has_no_alarms(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    d = make_daemon(roots=[settled_folder(tmp_path / "memory", ["a.md", "b.md"])])
    kinds, text, doctor = shown(d)
    assert kinds == {}
    assert "alarms:  none" in text
    for name in ("hook reach", "selection", "watchers", "index sync"):
        assert any(line.startswith("ok") and f"  {name}  " in line for line in doctor.splitlines())


def test_files_indexed_under_escaped_names_are_not_an_index_behind_the_disk(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    root = settled_folder(tmp_path / "memory", ["a.md"])
    for raw in (b"bad_\xff.md", b"new\nline.md"):
        path = os.path.join(os.fsencode(root), raw)
        with open(path, "wb") as fh:
            fh.write(b"---\ndescription: a memory with a hostile name\n---\n")
        os.utime(path, (HOUR_AGO, HOUR_AGO))
    os.utime(root, (HOUR_AGO, HOUR_AGO))
    d = make_daemon(roots=[root])
    kinds, _text, _doctor = shown(d)
    assert "index" not in kinds


def test_failed_hook_requests_are_counted_until_one_is_answered(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    root = settled_folder(tmp_path / "memory", ["deploy.md"])
    d = make_daemon(roots=[root])
    event = json.dumps(
        {"hook_event_name": "UserPromptSubmit", "prompt": "how do I deploy", "cwd": str(tmp_path)}
    )
    nowhere = tmp_path / "nowhere.sock"
    for _ in range(3):
        done = cli(
            d, "hook", "claude-code", "--dir", str(root), "--socket", str(nowhere), stdin=event
        )
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    kinds, text, doctor = shown(d)
    assert len(kinds["hook"]) == 1
    assert "the Claude Code hook's last 3 request(s) to the daemon failed" in kinds["hook"][0]
    assert f"socket {nowhere}" in kinds["hook"][0]
    assert "  ! hook: the Claude Code hook's last 3 request(s)" in text
    assert any(
        line.startswith("warn") and "hook reach" in line and "last 3 request(s)" in line
        for line in doctor.splitlines()
    )
    # doctor reads the hook's record even when no daemon answers
    alone = cli(d, "doctor", "--socket", str(nowhere)).stdout
    assert "last 3 request(s) to the daemon failed" in alone

    done = cli(d, "hook", "claude-code", "--dir", str(root), "--socket", str(d.socket), stdin=event)
    assert done.returncode == 0
    kinds, _, _ = shown(d)
    assert "hook" not in kinds


def test_a_folder_that_gets_nothing_selected_is_named(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    root = settled_folder(tmp_path / "memory", ["deploy.md", "rollback.md"])
    d = make_daemon(roots=[root])
    with d.client() as c:
        for i in range(NOTHING_RUNS - 1):
            assert c.select(f"zebra quartz {i}", str(root))["selected"] == []
    assert "selection" not in shown(d)[0]  # one short of the alarm
    with d.client() as c:
        c.select("zebra quartz", str(root))
    kinds, text, doctor = shown(d)
    assert kinds["selection"] == [kinds["selection"][0]]
    assert f"nothing was selected for the last {NOTHING_RUNS} prompts in {root}" in text
    assert "which had up to 2 memories to choose from" in kinds["selection"][0]
    assert any(line.startswith("warn") and "selection" in line for line in doctor.splitlines())
    with d.client() as c:
        assert c.select("how to deploy the deploy", str(root))["selected"]
    assert "selection" not in shown(d)[0]


def test_the_index_behind_the_disk_is_said_until_a_reindex(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    root = settled_folder(tmp_path / "memory", ["a.md", "b.md", "c.md"])
    d = make_daemon(roots=[root])
    assert "index" not in shown(d)[0]
    # The index loses a row and keeps an old stat for another, the disk staying as it was.
    with sqlite3.connect(d.db) as conn:
        conn.execute("DELETE FROM files WHERE filename = 'a.md'")
        conn.execute("UPDATE files SET size = size + 1 WHERE filename = 'b.md'")
    conn.close()
    kinds, text, doctor = shown(d)
    message = f"the index is behind the disk in {root}: 1 file(s) not indexed, 1 changed"
    assert message in kinds["index"][0]
    assert message in text
    assert any(line.startswith("warn") and message in line for line in doctor.splitlines())
    assert cli(d, "reindex", "--socket", str(d.socket)).returncode == 0
    assert "index" not in shown(d)[0]


def test_a_root_whose_folder_is_gone_is_said(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    root = settled_folder(tmp_path / "memory", ["a.md"])
    d = make_daemon(roots=[root])
    shutil.rmtree(root)

    def gone() -> bool:
        return any(r["watcher"] == "missing" for r in d.call("status")["roots"])

    wait_until(gone, timeout=20, what="the root marked missing")
    kinds, text, doctor = shown(d)
    assert kinds["watcher"] == [f"{root} does not exist: nothing is watched there until it does"]
    assert f"  ! watcher: {root} does not exist" in text
    assert any(line.startswith("warn") and "watchers" in line for line in doctor.splitlines())


def alarms_of(parts: Any, cfg: Config) -> list[Alarm]:
    reader = Readers(cfg.db_path).conn
    return alarms.find(parts.roots.paths(), parts.watcher, parts.maintenance, reader)


def test_polling_and_a_dead_watcher_are_said(tmp_path: Path) -> None:
    polled, watched = tmp_path / "polled", tmp_path / "watched"
    polled.mkdir()
    watched.mkdir()
    cfg = Config(roots=(str(polled), str(watched)), state_dir=tmp_path / "state")
    with composed(cfg) as parts:
        parts.watcher.inotify_watches = 0  # no inotify watch left for memoryd: polled
        parts.roots.add(str(polled), "configured")
        parts.watcher.inotify_watches = 10_000
        parts.roots.add(str(watched), "configured")
        messages = [a["message"] for a in alarms_of(parts, cfg) if a["kind"] == "watcher"]
        assert messages == [
            f"{polled} is polled, not watched with inotify: {parts.watcher.mode_of(str(polled))[1]}"
        ]
        parts.watcher._shared["inotify"].stop()
        parts.watcher._shared["inotify"].join(timeout=5)
        parts.maintenance.check_observers()
        died = [a["message"] for a in alarms_of(parts, cfg) if "died" in a["message"]]
        assert len(died) == 1
        assert died[0].startswith(f"the watcher of {watched} died 1 time(s), last at ")
