"""The socket methods answered by the shared :class:`~memoryd.service.MemoryService`.

``select``, ``stats``, ``list``, ``save``, ``load_last``, ``context``,
``report`` and ``check`` are one table here: each handler hands its params
to :meth:`MemoryService.call`, which parses and answers.
:class:`~memoryd.daemon.daemon_index.DaemonIndex` is what the service runs
over in the daemon.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from memoryd.daemon import report_handlers, staleness_handlers
from memoryd.daemon.daemon_index import DaemonIndex
from memoryd.daemon.staleness_handlers import pop_cwd
from memoryd.ipc.server import Handler
from memoryd.select.manifest import ManifestCache
from memoryd.select.service import claude_factory, make_selector, retention_of
from memoryd.service import METHODS, MemoryService

if TYPE_CHECKING:
    from memoryd.daemon.app import Daemon

CAPABILITIES = [
    "select",
    "stats",
    "select-ranker-local",
    "select-ranker-anthropic",
    "selector-telemetry",
    "save",
    "load_last",
    "context",
    "session-schema-1.1",
    "project-case-notes",
]


def handlers(daemon: Daemon) -> dict[str, Handler]:
    """The service's methods, with the report schedule and the staleness checker started."""
    index = DaemonIndex(daemon)
    daemon.on_stop.append(index.queue_flush)  # rows still waiting for their flush delay
    daemon.on_repair.append(index.flush_held)
    daemon.on_reload.append(lambda cfg: setattr(index, "retention", retention_of(cfg)))
    staleness = staleness_handlers.start(daemon, index.write)
    reporter = report_handlers.start(daemon)
    service = MemoryService(index, make_selector(daemon.cfg), staleness.checker, reporter)
    selector = service.selector
    daemon.on_reload.append(lambda cfg: setattr(selector, "claude_factory", claude_factory(cfg)))
    daemon.on_reload.append(lambda cfg: setattr(selector, "log_queries", cfg.log_queries))
    # A rebuilt index numbers its folders' versions from 1 again: drop what was cached.
    daemon.on_rebuilt.append(lambda: setattr(selector, "manifests", ManifestCache()))
    table: dict[str, Handler] = {method: partial(service.call, method) for method in METHODS}

    def select(params: dict[str, Any]) -> Any:
        cwd = pop_cwd(params)
        result = service.call("select", params)
        if cwd is not None:
            staleness.note_cwd(params.get("dir"), cwd)
        return result

    table["select"] = select
    return table
