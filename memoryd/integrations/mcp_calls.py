"""The memory tools of ``memoryd mcp``, over one connection to the warm daemon (never started).

Each tool takes arguments :func:`check_arguments` passed; every failure is a
:class:`ToolError` telling the agent what happened. A tool answers ``(structured result,
text)``. Without ``dir`` a tool serves Claude Code's memory folder for ``$CLAUDE_PROJECT_DIR``,
else the client's first root, else the working directory. What the session was shown is kept
in the hook's record, so neither repeats it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from memoryd._delivery import memory_block, memory_text
from memoryd.claude_folders import memory_folder
from memoryd.errors import START_HINT, DaemonUnavailable, MemorydError, RequestError
from memoryd.indexer.store import open_reader
from memoryd.integrations import why
from memoryd.integrations._hook_state import SessionState
from memoryd.ipc.client import Client
from memoryd.params import Dir, decode, param
from memoryd.replies import (
    ContextReply,
    LoadLastReply,
    SaveResult,
    SelectedMemory,
    SelectResult,
    StatusReply,
)

CALL_TIMEOUT_S = 60.0
SELECT_BOOKKEEPING = ("excluded", "dropped_unknown", "latency_ms")  # telemetry, not for the model
STATUS_BOOKKEEPING = ("capabilities",)  # for programs that talk to the socket, not the model
ToolAnswer = tuple[Mapping[str, object], str]  # (structured result, text for the model)


class ShownMemory(SelectedMemory):
    """A selected memory as ``memory_select`` answers it: with its text (None: unreadable)."""

    text: str | None


@dataclass(frozen=True)
class Why:
    """``memory_why``'s arguments: it reads the index itself, so it is no socket method."""

    session_id: str | None = param("session id (default: Claude Code's)", None, max_len=200)
    last: int = param("how many prompts, newest last", 5, lo=1, hi=50)
    dir: Dir | None = param("the memory directory", None)


class ToolError(Exception):
    """A tool call that failed in a way the agent should read (sent with ``isError``)."""


class MemoryTools:
    """The tools, over one daemon connection; ``environ`` says who started us."""

    def __init__(self, socket: Path | None, environ: Mapping[str, str]) -> None:
        self._client = Client(socket, timeout=CALL_TIMEOUT_S)
        self._project = environ.get("CLAUDE_PROJECT_DIR") or None
        self._session = environ.get("CLAUDE_CODE_SESSION_ID") or None
        self.roots: list[str] = []  # the client's file:// roots as paths, in its order

    def close(self) -> None:
        self._client.close()

    def _ask(self, method: str, params: Mapping[str, object]) -> Any:
        try:
            return self._client.call(method, params)
        except DaemonUnavailable as exc:
            raise ToolError(
                f"the memoryd daemon is not running ({exc}); {START_HINT} and retry "
                "(this server never starts one)"
            ) from None
        except RequestError as exc:
            raise ToolError(f"memoryd {method} failed [{exc.code}]: {exc.message}") from None
        except MemorydError as exc:  # sent, but no (valid) answer: do not retry blindly
            raise ToolError(f"memoryd {method} failed: {exc}") from None

    def _dir(self, args: Mapping[str, object]) -> str:
        given = args.get("dir")
        if isinstance(given, str) and given:
            return given
        project = self._project or next(iter(self.roots), None) or os.getcwd()
        return str(memory_folder(project).directory)

    def memory_select(self, args: Mapping[str, object]) -> ToolAnswer:
        directory = self._dir(args)
        session = cast("str | None", args.get("session_id")) or self._session
        state = SessionState(session) if session else None
        surfaced = _listed(args.get("surfaced"))
        if state is not None:
            surfaced += state.surfaced_in(os.path.realpath(directory))
        params = {**args, "dir": directory, "surfaced": surfaced, "session_id": session}
        reply: SelectResult = self._ask("select", params)
        result = {k: v for k, v in reply.items() if k not in SELECT_BOOKKEEPING}
        blocks = []
        shown: list[ShownMemory] = []
        for entry in reply["selected"]:
            try:
                memory: str | None = memory_text(entry["path"], os.path.realpath(directory))
            except OSError:
                memory = None
            shown.append({**entry, "text": memory})
            blocks.append(memory_block(entry, memory or "(unreadable now)"))
        result["selected"] = shown
        if not blocks:
            text = reply.get("note") or "No memory clearly helps with this; do not ask again."
        else:
            text = f"{len(blocks)} memor{'y' if len(blocks) == 1 else 'ies'}:\n" + "".join(blocks)
        if state is not None and reply["selected"]:
            # Recorded as it goes out: the next ask (hook or tool) does not repeat it.
            state.record([e["path"] for e in reply["selected"]])
        return result, text

    def memory_load_last(self, args: Mapping[str, object]) -> ToolAnswer:
        result: LoadLastReply = self._ask("load_last", {**args, "dir": self._dir(args)})
        if not result.get("found"):
            return result, str(result.get("message") or "no session memory found")
        return result, f"{result['resume_line']}\nFile: {result['path']}\n\n{result['content']}"

    def memory_save(self, args: Mapping[str, object]) -> ToolAnswer:
        result: SaveResult = self._ask("save", {**args, "dir": self._dir(args)})
        how = "new file" if result.get("created") else "updated"
        return result, f"Saved {result['path']} ({how})."

    def memory_context(self, args: Mapping[str, object]) -> ToolAnswer:
        params = {k: v for k, v in args.items() if k != "more_dirs"}
        params["dir"] = [self._dir(args), *_listed(args.get("more_dirs"))]
        result: ContextReply = self._ask("context", params)
        return result, str(result["text"])

    def memory_status(self, args: Mapping[str, object]) -> ToolAnswer:
        reply: StatusReply = self._ask("status", {})
        result = {k: v for k, v in reply.items() if k not in STATUS_BOOKKEEPING}
        result["client_socket"] = self._client.describe()
        roots = reply.get("roots") or []
        files = sum(int(r.get("files") or 0) for r in roots)
        text = (
            f"memoryd {reply.get('version')} {reply.get('state')} (pid {reply.get('pid')}): "
            f"{len(roots)} watched folder{'' if len(roots) == 1 else 's'}, {files} files; "
            f"socket {self._client.socket_path} (chosen by {self._client.socket_reason})"
        )
        return result, text

    def memory_why(self, args: Mapping[str, object]) -> ToolAnswer:
        """Reads the daemon's index (its path from ``status``) read-only."""
        directory = os.path.realpath(self._dir(args))
        try:
            db = self._ask("status", {}).get("db")
        except ToolError:
            db = None
        req = decode(Why, args)
        session = req.session_id or self._session
        try:
            with closing(open_reader(why.db_of(None, db))) as conn:
                report = why.explain(conn, directory, session=session, last=req.last)
        except MemorydError as exc:
            raise ToolError(f"memory_why: {exc}") from None
        return report, why.render(report)


def _listed(value: object) -> list[object]:
    """An optional list argument (its items are the daemon's to check)."""
    return list(cast("Iterable[object]", value or []))
