"""``memoryd mcp``: the daemon's memory methods as tools for any MCP client.

A stdio server built on the ``mcp`` package's :class:`MCPServer`. Each tool
builds its typed request (``SelectRequest``, ``LoadLastRequest``,
``ContextRequest``, ``SaveParams``) and sends it
through :class:`memoryd.ipc.client.Client`, so the warm daemon
does the work and this process stays small; it never starts a daemon itself.
A daemon that is not running, and any error the daemon answers with, come back
as tool errors (``isError``) whose text tells the agent what happened, rather
than as protocol failures the agent cannot read.

The descriptions are written for the model choosing tools: each says *when*
to call it, not only what it does.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from memoryd import __version__, paths
from memoryd.errors import START_HINT, DaemonUnavailable, MemorydError, RemoteError
from memoryd.integrations.mcp_schemas import (
    ContextResult,
    LoadLastResult,
    SaveResult,
    SelectResult,
    StatusResult,
)
from memoryd.ipc.client import Client
from memoryd.operations import ContextRequest, LoadLastRequest, SaveParams
from memoryd.select.types import SelectRequest

R = TypeVar("R")

CALL_TIMEOUT_S = 60.0

Dir = Annotated[
    str,
    Field(description="Absolute path of the memory folder, e.g. ~/.claude/projects/<p>/memory"),
]
Project = Annotated[
    str,
    Field(description="Project slug: lowercase letters, digits, '.', '_', '-' (no '/')"),
]
OptionalText = Annotated[str | None, Field(description="Optional.")]


def build_server(socket: Path | None = None) -> MCPServer[Any]:
    """The server with its five tools, talking to the daemon on ``socket``."""
    socket_path = socket or paths.default_socket()

    def ask(method: str, use: Callable[[Client], R]) -> R:
        """``use``'s answer from the daemon, every failure turned into a tool error."""
        try:
            with Client(socket_path, timeout=CALL_TIMEOUT_S) as client:
                return use(client)
        except DaemonUnavailable as exc:
            raise ToolError(
                f"the memoryd daemon is not running ({exc}); {START_HINT} and retry "
                "(this server never starts one)"
            ) from None
        except RemoteError as exc:
            raise ToolError(f"memoryd {method} failed [{exc.code}]: {exc.message}") from None
        except MemorydError as exc:  # sent, but no (valid) answer: do not retry blindly
            raise ToolError(f"memoryd {method} failed: {exc}") from None

    server: MCPServer[Any] = MCPServer(
        name="memoryd",
        version=__version__,
        instructions=(
            "Tools over the user's AI-agent memory folders, indexed by a local daemon. "
            "Use memory_select before a task to pull in the few memories that matter, "
            "memory_load_last / memory_context at the start of a session to resume, "
            "and memory_save at checkpoints and at the end of a session."
        ),
    )

    @server.tool(
        description=(
            "Pick the memories (at most 5) that clearly help with a task or question. Call it "
            "when you start a task, when the topic changes, or before touching an area you may "
            "have notes about. Returns each memory's path, description, type and age; read the "
            "files you need. Pass session_id so the same memory is never returned twice in one "
            "session. An empty answer means nothing relevant: do not retry with the same query; "
            "when 'note' is set, the folder itself was wrong (it names the likely one)."
        )
    )
    def memory_select(
        *,
        query: Annotated[str, Field(description="The task or question, in natural language")],
        dir: Dir,
        session_id: Annotated[
            str | None, Field(description="Your session id, to avoid repeats within a session")
        ] = None,
        recent_tools: Annotated[
            list[str] | None,
            Field(description="Tools/CLIs you used recently (e.g. 'pytest'); skips their docs"),
        ] = None,
        surfaced: Annotated[
            list[str] | None, Field(description="File names already shown to you this session")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=5, description="Maximum number of memories")] = 5,
    ) -> SelectResult:
        request = SelectRequest(
            query=query,
            dir=dir,
            session_id=session_id,
            recent_tools=tuple(recent_tools or ()),
            surfaced=tuple(surfaced or ()),
            limit=limit,
        )
        return ask("select", lambda c: c.send(request))  # type: ignore[return-value]

    @server.tool(
        description=(
            "Load the newest session memory of a project: a one-line resume note plus the full "
            "file (summary, steps completed, active state, key decisions). Call it once at the "
            "start of a session when continuing earlier work on the project."
        )
    )
    def memory_load_last(dir: Dir, project: Project) -> LoadLastResult:
        request = LoadLastRequest(dir, project)
        return ask("load_last", lambda c: c.send(request))  # type: ignore[return-value]

    @server.tool(
        description=(
            "Write (or update) the session memory of a project so a later session can resume. "
            "Call it at checkpoints and before the session ends. Saving again in the same session "
            "(the same 'session' timestamp; by default, the same minute) updates that file and "
            "keeps what the earlier save recorded that this one does not restate: steps, key "
            "decisions, approved checkpoints, omitted fields; the reply's 'kept' lists them."
        )
    )
    def memory_save(
        *,
        dir: Dir,
        project: Project,
        session_summary: Annotated[str, Field(description="What this session did, in prose")],
        active_state: Annotated[
            str | None, Field(description="Where things stand now and what comes next")
        ] = None,
        session: Annotated[
            str | None, Field(description="Session start as YYYY-MM-DD-HH-MM (default: now)")
        ] = None,
        status: Annotated[
            str | None, Field(description="One of in-progress, paused, completed")
        ] = None,
        mode: Annotated[str | None, Field(description="One of architect, express")] = None,
        last_checkpoint: OptionalText = None,
        target_dir: OptionalText = None,
        steps_completed: Annotated[
            dict[str, str] | None, Field(description="Step id -> what was done, e.g. {'S1': ...}")
        ] = None,
        key_decisions: Annotated[
            list[str] | None, Field(description="Decisions a later session must respect")
        ] = None,
        checkpoints_approved: Annotated[
            list[str] | None, Field(description="Checkpoint labels the user approved")
        ] = None,
    ) -> SaveResult:
        # The tool's arguments are SaveParams's fields, by the wire's names.
        params: dict[str, Any] = {
            "dir": dir,
            "project": project,
            "session_summary": session_summary,
            "active_state": active_state,
            "session": session,
            "status": status,
            "mode": mode,
            "last_checkpoint": last_checkpoint,
            "target_dir": target_dir,
            "steps_completed": steps_completed,
            "key_decisions": key_decisions,
            "checkpoints_approved": checkpoints_approved,
        }
        request = SaveParams(**params)
        return ask("save", lambda c: c.send(request))  # type: ignore[return-value]

    @server.tool(
        description=(
            "A short brief, with citations, of what earlier sessions learned that bears on a "
            "task (decisions, dead ends, open work). Call it when starting work that earlier "
            "sessions may have touched, before re-deciding something."
        )
    )
    def memory_context(
        task: Annotated[str, Field(description="The task you are about to do")],
        dir: Dir,
        more_dirs: Annotated[
            list[str] | None, Field(description="Other memory folders to read too (optional)")
        ] = None,
        project: Annotated[str | None, Field(description="Limit to one project slug")] = None,
        budget_tokens: Annotated[
            int, Field(ge=100, le=4000, description="Size limit of the brief")
        ] = 600,
    ) -> ContextResult:
        request = ContextRequest(task, (dir, *(more_dirs or ())), project, budget_tokens)
        return ask("context", lambda c: c.send(request))  # type: ignore[return-value]

    @server.tool(
        description=(
            "Health of the memoryd daemon: state, watched folders, index size. Call it when "
            "another memory tool fails or returns nothing unexpectedly."
        )
    )
    def memory_status() -> StatusResult:
        return ask("status", lambda c: c.status())  # type: ignore[return-value]

    return server


def serve(socket: Path | None = None) -> None:
    """Serve MCP on stdin/stdout until the client closes the stream."""
    build_server(socket).run("stdio")
