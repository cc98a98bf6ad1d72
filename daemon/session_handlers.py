"""Socket methods for session memories: ``save``, ``load_last``, ``context``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memoryd.indexer.sync import Syncer
from memoryd.ipc import params as p
from memoryd.ipc.server import Handler
from memoryd.sessions import service

if TYPE_CHECKING:
    from memoryd.daemon.app import Daemon

CAPABILITIES = ["save", "load_last", "context", "session-schema-1.1"]


def handlers(daemon: Daemon) -> dict[str, Handler]:
    def save(params: dict[str, Any]) -> dict[str, Any]:
        # Every refusal comes before the write: a refused save leaves no file.
        result = service.save(params, check_dir=daemon.refuse_too_broad)
        directory = daemon.ensure_dir(params["dir"])
        # Index the new file now, so a load_last right after the reply sees it.
        daemon.writer.call(lambda store: Syncer(store).sync_path(result["path"]))
        return {**result, "dir": directory}

    def load_last(params: dict[str, Any]) -> dict[str, Any]:
        p.reject_unknown(params, ("dir", "project", "reveal_secrets"))
        project = service.project_param(params)
        assert project is not None
        reveal = p.boolean(params, "reveal_secrets")
        directory = daemon.ensure_dir(params.get("dir"))
        return service.load_last(daemon.readers.conn(), directory, project, reveal_secrets=reveal)

    def context(params: dict[str, Any]) -> dict[str, Any]:
        task, raw_dirs, project, budget = service.context_params(params)
        dirs = [p.directory(d) for d in raw_dirs]
        # An unreadable history is reported in the brief ("unavailable"), so
        # only readable directories are watched and indexed.
        if not any(service.dir_unreadable(d) for d in dirs):
            dirs = [daemon.ensure_dir(d) for d in dirs]
        return service.context(
            daemon.readers.conn(), dirs, task, project, budget, readable=service.dir_unreadable
        )

    return {"save": save, "load_last": load_last, "context": context}
