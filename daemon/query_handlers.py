"""Socket methods that answer agents' questions: ``select`` and ``stats``."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from memoryd.daemon.staleness_handlers import pop_cwd
from memoryd.ipc.server import Handler
from memoryd.select.service import claude_factory, make_selector, record_run, run_select, run_stats
from memoryd.select.types import parse_stats

if TYPE_CHECKING:
    from memoryd.daemon.app import Daemon

CAPABILITIES = [
    "select",
    "stats",
    "select-ranker-local",
    "select-ranker-anthropic",
    "selector-telemetry",
]


def handlers(daemon: Daemon) -> dict[str, Handler]:
    index = _DaemonSelectIndex(daemon)
    selector = make_selector(daemon.cfg)
    daemon.on_reload.append(lambda cfg: setattr(selector, "claude_factory", claude_factory(cfg)))
    daemon.on_reload.append(lambda cfg: setattr(selector, "log_queries", cfg.log_queries))

    def select(params: dict[str, Any]) -> dict[str, Any]:
        cwd = pop_cwd(params)
        result = dict(run_select(selector, index, params))
        if cwd is not None and daemon.staleness is not None:
            daemon.staleness.note_cwd(params.get("dir"), cwd)
        return result

    def stats(params: dict[str, Any]) -> dict[str, Any]:
        return run_stats(daemon.readers.conn(), parse_stats(params))

    return {"select": select, "stats": stats}


class _DaemonSelectIndex:
    """``select`` over the daemon's index: this thread's reader, watched roots, the writer queue."""

    def __init__(self, daemon: Daemon) -> None:
        self._daemon = daemon

    def reader(self) -> sqlite3.Connection:
        return self._daemon.readers.conn()

    def select_dir(self, raw: str) -> str:
        return self._daemon.ensure_dir(raw)

    def record_run(self, record: dict[str, Any]) -> None:
        self._daemon.writer.submit(lambda store: record_run(store, record))
