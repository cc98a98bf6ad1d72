"""A root keeps every reason it is watched: dropping one reason never drops a root another holds.

Claude Code's project folder, created after the daemon started and named by
the hook, became a stored request root; at the next start it was declared as
a Claude Code folder too, and the stored row's "forget" removed the folder
itself (``root_forgotten reason=restart``, not watched until the start after).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from daemon_fixtures import DaemonProc, composed, write_memory
from hook_project import Project

from memoryd.claude_folders import memory_folder
from memoryd.config import Config


class Clock:
    def __init__(self) -> None:
        self.now = 1_750_000_000.0

    def __call__(self) -> float:
        return self.now


def roots(d: DaemonProc) -> dict[str, dict[str, Any]]:
    return {r["path"]: r for r in d.call("status")["roots"]}


def forgotten(d: DaemonProc) -> list[dict[str, Any]]:
    events = (json.loads(line) for line in d.log().splitlines() if line.startswith("{"))
    return [e for e in events if e.get("event") == "daemon.root_forgotten"]


def test_claude_codes_folder_made_after_start_is_still_watched_after_a_restart(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    d = make_daemon(roots=[])  # the default roots: no Claude Code folder yet, the XDG one
    fallback = str(d.home / "data" / "memoryd" / "memory")
    assert {p: r["origin"] for p, r in roots(d).items()} == {fallback: "default"}
    checkout = tmp_path / "shop"
    checkout.mkdir()
    folder = memory_folder(str(checkout), d.env).directory  # Claude Code makes it now
    write_memory(folder / "feedback_xdist.md", "Gotcha: pytest xdist workers share a database")
    project = Project(d, checkout, folder)
    prompt = project.event("UserPromptSubmit", prompt="why do the pytest xdist workers clash?")
    assert "feedback_xdist.md" in project.context(prompt)  # the hook named the folder
    assert roots(d)[str(folder)]["origin"] == "request"
    d.stop()
    d.start()  # now Claude Code's folder is declared at start as well
    state = roots(d)[str(folder)]
    assert (state["origin"], state["watcher"], state["files"]) == ("claude", "inotify", 1)
    assert state["forget_after"] is None
    assert forgotten(d) == []
    assert "feedback_xdist.md" in project.context({**prompt, "session_id": "s2"})
    d.stop()
    d.start()  # and again: nothing stored turns it back into a request root
    assert roots(d)[str(folder)]["origin"] == "claude"
    assert forgotten(d) == []


@pytest.fixture
def cfg(tmp_path: Path) -> Config:
    return Config(
        socket=tmp_path / "s.sock",
        state_dir=tmp_path,
        db=tmp_path / "index.db",
        request_root_idle_days=1,
    )


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "project" / "memory"
    write_memory(path / "reference_deploy.md", "How we deploy: the blue/green runbook")
    return path


def files_under(parts: Any, folder: Path) -> int:
    return int(parts.writer.call(lambda s: len(s.paths_in(str(folder)))))


def test_a_stored_request_row_idle_past_its_time_leaves_the_declared_root(
    cfg: Config, folder: Path
) -> None:
    clock = Clock()
    with composed(cfg, clock) as parts:
        parts.roots.ensure_dir(str(folder))
    with composed(cfg, clock) as parts:  # a restart that declares the folder
        parts.roots.restore([(str(folder), "claude")])
        parts.maintenance.reconcile("startup")
        clock.now += 3 * 86400
        parts.maintenance.reconcile("scheduled")  # the request row is idle now
        entry = parts.roots.get(str(folder))
        assert entry is not None and entry.origin == "claude"
        assert files_under(parts, folder) == 1
        assert parts.writer.call(lambda s: s.root_rows()) == []  # nothing left to remember


def test_a_root_named_by_the_config_on_reload_is_no_longer_forgotten_when_idle(
    cfg: Config, folder: Path
) -> None:
    clock = Clock()
    with composed(cfg, clock) as parts:
        parts.roots.ensure_dir(str(folder))
        parts.roots.reconfigure(Config(roots=(str(folder),), request_root_idle_days=1))
        clock.now += 3 * 86400
        parts.maintenance.reconcile("scheduled")
        entry = parts.roots.get(str(folder))
        assert entry is not None and entry.origin == "configured"
        assert files_under(parts, folder) == 1
        # Out of the config again: it was only ever a request root besides; gone.
        parts.roots.reconfigure(Config(request_root_idle_days=1))
        assert parts.roots.get(str(folder)) is None and files_under(parts, folder) == 0


def test_a_watched_root_later_in_the_config_stays_watched_when_the_config_drops_it(
    cfg: Config, folder: Path
) -> None:
    with composed(cfg) as parts:
        parts.roots.watch_dir(str(folder))  # the user asked for it
    configured = replace(cfg, roots=(str(folder),))
    with composed(configured) as parts:  # a restart with the folder in the config too
        parts.roots.restore([(str(folder), "configured")])
        entry = parts.roots.get(str(folder))
        assert entry is not None and entry.origin == "configured"
        parts.roots.reconfigure(cfg)  # out of the config: still watched, as asked
        entry = parts.roots.get(str(folder))
        assert entry is not None and entry.origin == "watch"
        assert files_under(parts, folder) == 1
    with composed(cfg) as parts:  # and still remembered
        parts.roots.restore([])
        entry = parts.roots.get(str(folder))
        assert entry is not None and entry.origin == "watch"
