"""Socket methods answered by the shared :class:`~memoryd.service.MemoryService`.

``select``, ``stats`` and ``list`` are thin here: the service parses and
answers; :class:`DaemonIndex` is what it runs over in the daemon.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from memoryd.daemon.staleness_handlers import pop_cwd
from memoryd.ipc.server import Handler
from memoryd.select.service import claude_factory, make_selector, record_run
from memoryd.service import MemoryService

if TYPE_CHECKING:
    from memoryd.daemon.app import Daemon

CAPABILITIES = [
    "select",
    "stats",
    "select-ranker-local",
    "select-ranker-anthropic",
    "selector-telemetry",
]


class DaemonIndex:
    """The daemon's index: this thread's reader, directories kept watched, runs queued."""

    def __init__(self, daemon: Daemon) -> None:
        self._daemon = daemon

    def reader(self) -> sqlite3.Connection:
        return self._daemon.readers.conn()

    def directory(self, raw: str) -> str:
        return self._daemon.ensure_dir(raw)

    def record_run(self, record: dict[str, Any]) -> None:
        # Queued after the answer is computed: telemetry never blocks a reply.
        self._daemon.writer.submit(lambda store: record_run(store, record))

    def runs_recorded(self) -> None:
        # The writer runs jobs in order: once this no-op is done, so are the
        # telemetry rows queued before it.
        self._daemon.writer.call(lambda store: None)


def handlers(daemon: Daemon) -> dict[str, Handler]:
    service = MemoryService(DaemonIndex(daemon), make_selector(daemon.cfg))
    selector = service.selector
    daemon.on_reload.append(lambda cfg: setattr(selector, "claude_factory", claude_factory(cfg)))
    daemon.on_reload.append(lambda cfg: setattr(selector, "log_queries", cfg.log_queries))

    def select(params: dict[str, Any]) -> dict[str, Any]:
        cwd = pop_cwd(params)
        result = dict(service.select(params))
        if cwd is not None and daemon.staleness is not None:
            daemon.staleness.note_cwd(params.get("dir"), cwd)
        return result

    return {"select": select, "stats": service.stats, "list": service.list}
