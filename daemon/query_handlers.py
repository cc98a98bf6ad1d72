"""Socket methods that answer agents' questions: ``select`` and ``stats``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memoryd.daemon.staleness_handlers import pop_cwd
from memoryd.ipc.server import Handler
from memoryd.select.service import claude_factory, make_selector, record_run, run_stats

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
    def sink(record: dict[str, Any]) -> None:
        daemon.writer.submit(lambda store: record_run(store, record))

    selector = make_selector(daemon.cfg, sink)
    daemon.on_reload.append(lambda cfg: setattr(selector, "claude_factory", claude_factory(cfg)))
    daemon.on_reload.append(lambda cfg: setattr(selector, "log_queries", cfg.log_queries))

    def select(params: dict[str, Any]) -> dict[str, Any]:
        cwd = pop_cwd(params)
        result = selector.run(daemon.readers.conn(), params, daemon.ensure_dir)
        if cwd is not None and daemon.staleness is not None:
            daemon.staleness.note_cwd(params.get("dir"), cwd)
        return result

    def stats(params: dict[str, Any]) -> dict[str, Any]:
        return run_stats(daemon.readers.conn(), params)

    return {"select": select, "stats": stats}
