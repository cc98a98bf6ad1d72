"""Socket methods for session memories: ``save``, ``load_last``, ``context``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memoryd.indexer.sync import Syncer
from memoryd.ipc import params as p
from memoryd.ipc.server import Handler
from memoryd.sessions import service
from memoryd.sessions.format import project_case_note

if TYPE_CHECKING:
    from memoryd.daemon.app import Daemon

CAPABILITIES = ["save", "load_last", "context", "session-schema-1.1", "project-case-notes"]


def _noted(result: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    """``result`` with ``notes`` saying so when a capitalised project name was lowercased."""
    note = project_case_note(params.get("project"))
    return {**result, "notes": [note]} if note else result


def handlers(daemon: Daemon) -> dict[str, Handler]:
    def save(params: dict[str, Any]) -> dict[str, Any]:
        # Every refusal comes before the write: a refused save leaves no file.
        result = service.save(params, check_dir=daemon.refuse_too_broad)
        directory = daemon.ensure_dir(params["dir"])
        # Index the new file now, so a load_last right after the reply sees it.
        daemon.writer.call(lambda store: Syncer(store).sync_path(result["path"]))
        return _noted({**result, "dir": directory}, params)

    def load_last(params: dict[str, Any]) -> dict[str, Any]:
        p.reject_unknown(params, ("dir", "project", "reveal_secrets"))
        project = service.project_param(params)
        assert project is not None
        reveal = p.boolean(params, "reveal_secrets")
        directory = daemon.ensure_dir(params.get("dir"))
        found = service.load_last(daemon.readers.conn(), directory, project, reveal_secrets=reveal)
        return _noted(found, params)

    def context(params: dict[str, Any]) -> dict[str, Any]:
        task, raw_dirs, project, budget = service.context_params(params)
        dirs = [p.directory(d) for d in raw_dirs]
        # An unreadable history is reported in the brief ("unavailable"), so
        # only readable directories are watched and indexed.
        if not any(service.dir_unreadable(d) for d in dirs):
            dirs = [daemon.ensure_dir(d) for d in dirs]
        brief = service.context(
            daemon.readers.conn(), dirs, task, project, budget, readable=service.dir_unreadable
        )
        return _noted(brief, params)

    return {"save": save, "load_last": load_last, "context": context}
