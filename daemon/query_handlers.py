"""The socket methods answered by the shared :class:`~memoryd.service.MemoryService`.

``select``, ``stats``, ``list``, ``save``, ``load_last``, ``context``,
``report`` and ``check`` are one table here: each handler hands its params
to :meth:`MemoryService.call`, which parses and answers.
:class:`~memoryd.daemon.daemon_index.DaemonIndex` is what the service runs
over in the daemon.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from memoryd.daemon.staleness_handlers import Staleness, pop_cwd
from memoryd.ipc.server import Handler
from memoryd.service import METHODS, MemoryService

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


def handlers(service: MemoryService, staleness: Staleness) -> dict[str, Handler]:
    """The service's methods; ``select`` also tells the staleness checker the agent's ``cwd``."""
    table: dict[str, Handler] = {method: partial(service.call, method) for method in METHODS}

    def select(params: dict[str, Any]) -> Any:
        cwd = pop_cwd(params)
        result = service.call("select", params)
        if cwd is not None:
            staleness.note_cwd(params.get("dir"), cwd)
        return result

    table["select"] = select
    return table
