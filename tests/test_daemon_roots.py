"""Where roots come from and how they go: request roots expire, ``watch`` keeps, ``unwatch`` drops.

Real daemons on real sockets; expiry is seen on the daemon's parts in this
process, with a clock the test moves instead of waiting days.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from daemon_fixtures import DaemonProc, composed, write_memory

from memoryd.cli.serve import declared_roots
from memoryd.config import Config
from memoryd.daemon.compose import Parts
from memoryd.errors import InvalidParams, NotFound


def roots(d: DaemonProc) -> dict[str, dict[str, Any]]:
    return {r["path"]: r for r in d.call("status")["roots"]}


def select(d: DaemonProc, folder: Path) -> dict[str, Any]:
    return d.call("select", {"query": "how do we deploy?", "dir": str(folder)})  # type: ignore[no-any-return]


def configure(d: DaemonProc, text: str) -> None:
    path = d.home / "config" / "memoryd" / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def other(tmp_path: Path) -> Path:
    folder = tmp_path / "other" / "memory"
    write_memory(folder / "reference_deploy.md", "How we deploy: the blue/green runbook")
    return folder


def test_origins_are_shown_and_a_request_root_survives_a_restart(
    daemon: DaemonProc, other: Path
) -> None:
    assert select(daemon, other)["selected"]
    listed = roots(daemon)
    assert listed[str(daemon.roots[0])]["origin"] == "serve"
    assert listed[str(daemon.roots[0])]["forget_after"] is None
    assert listed[str(other)]["origin"] == "request"
    assert listed[str(other)]["forget_after"] is not None
    daemon.stop()
    daemon.start()
    assert roots(daemon)[str(other)]["origin"] == "request"


def test_folders_without_memory_files_are_answered_but_never_watched(
    daemon: DaemonProc, other: Path, tmp_path: Path
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    reply = select(daemon, empty)
    assert reply["selected"] == []
    assert reply["note"] == f"no memories in {empty} (0 files)"
    parent = other.parent
    reply = select(daemon, parent)
    assert reply["note"] == (
        f"{parent} holds no memory files; did you mean {other}? "
        "(subfolders with memory files: memory)"
    )
    assert set(roots(daemon)) == {str(daemon.roots[0])}
    with pytest.raises(InvalidParams, match=f"not reindexed: {parent} holds no memory files"):
        daemon.call("reindex", {"dir": str(parent)})
    assert daemon.call("status")["state"] == "ready"
    assert "note" in select(daemon, other) and select(daemon, other)["note"] is None


class Clock:
    """Wall-clock seconds that move only when a test says so."""

    def __init__(self) -> None:
        self.now = 1_750_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def idle_cfg(tmp_path: Path) -> Config:
    """Request roots are forgotten after a day."""
    return Config(
        socket=tmp_path / "s.sock",
        state_dir=tmp_path,
        db=tmp_path / "index.db",
        request_root_idle_days=1,
    )


def files_under(parts: Parts, folder: Path) -> int:
    return parts.writer.call(lambda s: len(s.paths_in(str(folder))))


def test_an_idle_request_root_is_forgotten_with_its_rows(idle_cfg: Config, other: Path) -> None:
    clock = Clock()
    with composed(idle_cfg, clock) as parts:
        parts.roots.ensure_dir(str(other))  # a request names it: watched, indexed
        assert parts.roots.get(str(other)) is not None and files_under(parts, other) == 1
        clock.now += 86400 / 2
        parts.maintenance.reconcile("scheduled")
        assert str(other) in parts.roots.paths()  # half a day idle: kept
        clock.now += 86400
        parts.maintenance.reconcile("scheduled")  # a reconcile forgets idle roots first
        assert str(other) not in parts.roots.paths() and files_under(parts, other) == 0
    with composed(idle_cfg, clock) as parts:  # a restart
        parts.roots.restore([])
        assert parts.roots.paths() == []


def test_watch_keeps_a_root_past_the_idle_time_and_across_restarts(
    idle_cfg: Config, other: Path
) -> None:
    clock = Clock()
    with composed(idle_cfg, clock) as parts:
        parts.roots.ensure_dir(str(other))
        reply = parts.roots.watch_dir(str(other))
        assert (reply["added"], reply["origin"], reply["root"]) == (False, "watch", str(other))
        clock.now += 3 * 86400
        parts.maintenance.reconcile("scheduled")
        entry = parts.roots.get(str(other))
        assert entry is not None and entry.origin == "watch"
    with composed(idle_cfg, clock) as parts:  # a restart
        parts.roots.restore([])
        entry = parts.roots.get(str(other))
        assert entry is not None and entry.origin == "watch"
        assert parts.roots.watch_dir(str(other / ".." / "memory"))["added"] is False


def test_unwatch_removes_any_root_and_says_what_comes_back(daemon: DaemonProc, other: Path) -> None:
    select(daemon, other)
    reply = daemon.call("unwatch", {"dir": str(other)})
    assert reply == {
        "dir": str(other),
        "removed": True,
        "origin": "request",
        "files_forgotten": 1,
        "returns_at_restart": False,
    }
    assert str(other) not in roots(daemon)
    with pytest.raises(NotFound, match="is not a watched root"):
        daemon.call("unwatch", {"dir": str(other)})
    served = str(daemon.roots[0])
    assert daemon.call("unwatch", {"dir": served})["returns_at_restart"] is True
    assert roots(daemon) == {}
    assert daemon.call("status")["state"] == "ready"


def cli(d: DaemonProc, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memoryd", *argv, "--socket", str(d.socket)],
        env=d.env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_watch_and_unwatch_on_the_command_line(daemon: DaemonProc, other: Path) -> None:
    out = cli(daemon, "watch", str(other))
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"watching {other} (inotify); kept across restarts\n"
    status = cli(daemon, "status").stdout
    assert f"  {other}: 1 files, 0 with errors, inotify (watch)" in status
    out = cli(daemon, "unwatch", str(other))
    assert out.stdout == f"stopped watching {other} (watch); 1 file(s) dropped from the index\n"
    out = cli(daemon, "unwatch", str(other))
    assert out.returncode == 1 and "is not a watched root" in out.stderr


def test_declared_roots_name_their_origin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    claude = tmp_path / "claude"
    project = claude / "projects" / "-home-me-shop" / "memory"
    project.mkdir(parents=True)
    given = tmp_path / "given"
    given.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert declared_roots(Config(), [str(given)], defaults=True) == [
        (str(project), "claude"),
        (str(given), "serve"),
    ]
    assert declared_roots(Config(), [str(given)], defaults=False) == [(str(given), "serve")]
    configured = Config(roots=(str(given),))
    assert declared_roots(configured, [], defaults=False) == [(str(given), "configured")]
    shutil.rmtree(claude / "projects")
    fallback = str(tmp_path / "data" / "memoryd" / "memory")
    assert declared_roots(Config(), [], defaults=False) == [(fallback, "default")]
