"""The first index: progress in the log and in ``status``; requests wait for a complete index."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from daemon_fixtures import DaemonProc, write_memory

from memoryd.daemon.health import guard
from memoryd.daemon.lifecycle import IndexProgress, Lifecycle
from memoryd.daemon.writer import Writer
from memoryd.errors import InternalError
from memoryd.indexer.recovery import open_or_recover


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_is_logged_at_most_once_a_second_with_a_rate() -> None:
    clock = Clock()
    logs: list[dict[str, Any]] = []
    progress = IndexProgress(
        1000, clock=clock, emit=lambda event, **kw: logs.append({"event": event, **kw})
    )
    for _ in range(50):  # 500 files within the same 0.5 s
        clock.now += 0.01
        for _ in range(10):
            progress.advance()
    assert len(logs) == 1  # the first file, then nothing for a second
    clock.now += 1.0
    for _ in range(500):
        progress.advance()
    assert [e["done"] for e in logs] == [1, 501]
    progress.finish()
    last = logs[-1]
    assert last["event"] == "index.progress"
    assert (last["phase"], last["done"], last["total"]) == ("done", 1000, 1000)
    assert last["rate_per_s"] == round(1000 / 1.5)


def test_held_methods_wait_for_the_index_and_fail_if_the_daemon_stops_first(
    tmp_path: Path,
) -> None:
    writer = Writer(open_or_recover(tmp_path / "index.db")[0])
    try:
        life = Lifecycle()
        table = {"status": lambda p: "status", "select": lambda p: "picked"}
        handlers = guard(table, life, writer)
        assert handlers["status"]({}) == "status"  # never held
        answers: list[object] = []
        worker = threading.Thread(target=lambda: answers.append(handlers["select"]({})))
        worker.start()
        worker.join(0.2)
        assert worker.is_alive() and answers == []  # still waiting for the index
        life.state = "ready"
        life.ready.set()
        worker.join(5)
        assert answers == ["picked"]

        stopped = Lifecycle()
        stopped.state = "stopping"
        stopped.ready.set()
        stopping = guard({"select": lambda p: "picked"}, stopped, writer)
        with pytest.raises(InternalError, match="before its first index was complete"):
            stopping["select"]({})
    finally:
        writer.close()


def test_status_reports_the_first_index_and_the_log_has_progress(
    make_daemon: Callable[..., DaemonProc],
) -> None:
    d = make_daemon(start=False)
    for i in range(400):
        write_memory(d.roots[0] / f"d{i % 8}" / f"feedback_{i}.md", f"memory {i}")
    d.start()
    indexing = d.call("status")["indexing"]
    assert (indexing["phase"], indexing["done"], indexing["total"]) == ("done", 400, 400)
    lines = [json.loads(x) for x in d.log().splitlines() if '"index.progress"' in x]
    assert lines and lines[-1]["done"] == 400 and lines[-1]["phase"] == "done"
    assert all(line["total"] == 400 for line in lines)
