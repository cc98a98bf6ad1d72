"""``memoryd hook claude-code``: memories for Claude Code, without ever getting in its way.

Claude Code runs the hook with one event JSON object on stdin and reads extra
context from a ``hookSpecificOutput`` object on stdout:

* ``UserPromptSubmit`` -> ``select`` over the project's memory folder with the
  prompt as the query. The session id goes to the daemon (which then never
  repeats a memory in that session) and the files already shown go along as
  ``surfaced`` (so a restarted daemon does not repeat them either). Each chosen
  memory is injected with its path, its age and its text, capped per file and
  per session (see :mod:`memoryd.integrations._hook_state`).
* ``SessionStart`` -> ``load_last`` for the project: the resume line and the
  last session's summary. The project is the one named by the folder's newest
  session file (``2025-06-05-14-15-tasktrack.md`` -> ``tasktrack``), whatever
  the checkout's folder is called; a folder without session files falls back
  to the basename of ``cwd`` as a slug (``My App`` -> ``my-app``).

The project's memory folder is where Claude Code keeps auto-memory:
``$CLAUDE_CONFIG_DIR/projects/<cwd with / . \\ : as ->/memory``.

A hook that fails or stalls would break or slow every prompt, so every failure
(daemon down, folder missing, bad stdin, a bug) ends the same way: nothing on
stdout, exit 0, one log line on stderr saying why (a warning for failures;
``MEMORYD_LOG_LEVEL=INFO`` also shows quiet cases such as "nothing relevant",
and ``DEBUG`` a project without a memory folder, which is the common case).
The time budget holds with socket timeouts for the daemon call plus an
interval timer around everything else (including a stdin that never closes).
"""

from __future__ import annotations

import functools
import json
import os
import re
import signal
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, NamedTuple

from memoryd import paths
from memoryd.bounded_read import read_capped
from memoryd.errors import InvalidParams
from memoryd.indexer.secrets import redact
from memoryd.integrations._hook_state import SessionState
from memoryd.integrations._transcript import recent_tools
from memoryd.ipc.client import Client
from memoryd.logs import LazyLogger
from memoryd.paths import SESSION_FILENAME
from memoryd.staleness.render import caution

if TYPE_CHECKING:
    from memoryd.select.types import SelectResult

MAX_FILE_BYTES = 4 * 1024
MAX_FILE_LINES = 200
MAX_SESSION_BYTES = 60 * 1024
MIN_USEFUL_BYTES = 256
MAX_QUERY_CHARS = 20_000
DEFAULT_TIMEOUT = 2.0
STALE_AFTER_DAYS = 1.0

# Every prompt starts this hook in a fresh process: structlog is loaded only
# for an event that passes the level, and nothing else heavy is imported here.
log = LazyLogger("memoryd.hook")


class HookTimeout(Exception):
    """The hook's time budget ran out."""


class HookOptions(NamedTuple):
    directory: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    socket: Path | None = None


def project_memory_dir(cwd: str, config_dir: Path | None = None) -> Path:
    """Claude Code's memory folder for a project: ``/a/b.c`` -> ``projects/-a-b-c/memory``."""
    base = config_dir if config_dir is not None else paths.claude_config_dir()
    return base / "projects" / re.sub(r"[/.\\:]", "-", cwd) / "memory"


def project_slug(cwd: str) -> str | None:
    """The basename of ``cwd`` as a session-file project slug, or None if nothing is left."""
    name = os.path.basename(cwd.rstrip("/\\")).lower()
    slug = re.sub(r"[^a-z0-9._-]+", "-", name)
    slug = re.sub(r"\.{2,}", ".", slug).lstrip("._-")[:100]
    return slug or None


def newest_session_project(directory: str) -> str | None:
    """The project of the folder's newest session file, whatever the checkout is called.

    Session filenames start with their time, so the greatest name is the newest
    session; a folder Claude Code keeps for one checkout holds that project's
    sessions under whatever slug the agent saved them with.
    """
    try:
        names = [n for n in os.listdir(directory) if SESSION_FILENAME.match(n)]
    except OSError:
        return None
    newest = max(names, default=None)
    match = SESSION_FILENAME.match(newest) if newest else None
    return match.group(2) if match else None


def cap_text(text: str, max_bytes: int = MAX_FILE_BYTES, max_lines: int = MAX_FILE_LINES) -> str:
    """At most ``max_lines`` lines and ``max_bytes`` UTF-8 bytes, saying what was cut."""
    lines = text.splitlines()
    whole = "\n".join(lines)
    kept = "\n".join(lines[:max_lines])
    data = kept.encode("utf-8")
    if len(data) > max_bytes:
        kept = data[:max_bytes].decode("utf-8", errors="ignore")
        kept = kept.rsplit("\n", 1)[0] if "\n" in kept else kept
    if kept == whole:
        return kept
    dropped = len(whole.encode("utf-8")) - len(kept.encode("utf-8"))
    # The marker rides on top of the cap: the cap bounds the memory's own text.
    return f"{kept}\n[... {dropped} more bytes cut by memoryd; read the file for the rest]"


def age_note(age_days: float) -> str:
    days = int(age_days)
    text = f"{days} day{'' if days == 1 else 's'} old."
    if age_days > STALE_AFTER_DAYS:
        text += " It may be stale: check it against the current code before relying on it."
    return text


class _Budget:
    """What is left of the session's context allowance, in UTF-8 bytes."""

    def __init__(self, left: int) -> None:
        self.left = left

    def take(self, text: str) -> bool:
        size = len(text.encode("utf-8"))
        if size > self.left:
            return False
        self.left -= size
        return True


def run(stdin_text: str, options: HookOptions) -> dict[str, Any] | None:
    """The hook's stdout object for one event, or None for "say nothing"."""
    event = json.loads(stdin_text)
    if not isinstance(event, dict):
        raise ValueError("hook input is not a JSON object")
    name = event.get("hook_event_name")
    raw_cwd = event.get("cwd")
    cwd = raw_cwd if isinstance(raw_cwd, str) and raw_cwd else os.getcwd()
    directory = options.directory or str(project_memory_dir(cwd))
    session_id = event.get("session_id") if isinstance(event.get("session_id"), str) else None
    if name not in ("UserPromptSubmit", "SessionStart"):
        log.info("hook_skipped", reason="event not handled", hook_event_name=name)
        return None
    if not os.path.isdir(directory):
        # Most projects have no memory folder: that is the normal case, not a warning.
        log.debug("hook_skipped", reason="no memory directory", dir=directory)
        return None
    directory = os.path.realpath(directory)
    with Client(options.socket, timeout=options.timeout) as client:
        if name == "UserPromptSubmit":
            context = _on_prompt(event, directory, session_id, client)
        else:
            context = _on_session_start(cwd, directory, session_id, client)
    if context is None:
        return None
    return {"hookSpecificOutput": {"hookEventName": name, "additionalContext": context}}


def _on_prompt(
    event: dict[str, Any], directory: str, session_id: str | None, client: Client
) -> str | None:
    prompt = event.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        log.info("hook_skipped", reason="empty prompt")
        return None
    state = SessionState.load(session_id) if session_id else None
    budget = _Budget(MAX_SESSION_BYTES - (state.injected_bytes if state else 0))
    if budget.left < MIN_USEFUL_BYTES:
        log.info("hook_skipped", reason="session context budget spent", session_id=session_id)
        return None
    transcript = event.get("transcript_path")
    ask = functools.partial(
        client.select,
        prompt[:MAX_QUERY_CHARS],
        directory,
        surfaced=state.surfaced_in(directory) if state else None,
        recent_tools=recent_tools(transcript if isinstance(transcript, str) else None),
        session_id=session_id,
    )
    result = _select_with_cwd(ask, event.get("cwd"))
    header = f"memoryd: memories from {directory} that may help with this prompt.\n"
    if not result["selected"]:
        log.info("hook_skipped", reason="no memory clearly helps", run_id=result["run_id"])
        return None
    if not budget.take(header):
        return None
    parts, shown = [header], []
    for entry in result["selected"]:
        block = _memory_block(entry)
        if block is None:
            continue
        pointer = f"\n- {entry['path']} (not shown: this session's 60 KB memory budget is spent)\n"
        if budget.take(block):
            parts.append(block)
        elif budget.take(pointer):
            parts.append(pointer)
        else:
            continue
        shown.append(entry["path"])
    if not shown:
        return None
    text = "".join(parts)
    if state is not None:
        state.injected_bytes += len(text.encode("utf-8"))
        state.shown.extend(shown)
        state.save()
    return text


def _select_with_cwd(ask: Callable[..., SelectResult], cwd: object) -> SelectResult:
    """``ask(cwd=...)``, once more without ``cwd`` if the daemon predates that parameter.

    A daemon started before an upgrade keeps running the old code, which
    refuses ``cwd`` as unknown; the hook would stay silent until it restarts.
    Without ``cwd`` such a daemon still answers, only without the checkout hint.
    """
    if not isinstance(cwd, str):
        return ask(cwd=None)
    try:
        return ask(cwd=cwd)
    except InvalidParams as exc:
        if exc.data != {"fields": ["cwd"]}:
            raise
        log.info("hook_retry", reason="the daemon does not know 'cwd' (started before an upgrade)")
        return ask(cwd=None)


def _memory_block(entry: Mapping[str, Any]) -> str | None:
    try:
        # Bounded and never blocking: an indexed memory may have grown or become a FIFO.
        data, _more = read_capped(entry["path"])
        content = redact(data.decode("utf-8", errors="replace"))  # no credential reaches it
    except OSError as exc:
        log.info("memory_unreadable", path=entry["path"], error=str(exc))
        return None
    age = age_note(entry["age_days"])
    warning = caution(entry.get("staleness"))
    if warning:
        age += f"\n{warning}"
    title = entry.get("name") or entry["filename"]
    return f"\n## {title} ({entry['path']})\n{age}\n\n{cap_text(content)}\n"


def _on_session_start(
    cwd: str, directory: str, session_id: str | None, client: Client
) -> str | None:
    project = newest_session_project(directory) or project_slug(cwd)
    if project is None:
        log.info("hook_skipped", reason="no session memory and no project name in cwd", cwd=cwd)
        return None
    last = client.load_last(directory, project)
    if not last["found"]:
        log.info("hook_skipped", reason=last["message"])
        return None
    # Once per session, so the session-format package need not load on every prompt.
    from memoryd.sessions import parse_sections  # noqa: PLC0415

    summary = parse_sections(last["content"]).summary_text
    text = f"memoryd: {last['resume_line']}\nLast session file: {last['path']}\n"
    if summary:
        text += f"Session summary: {cap_text(summary)}\n"
    if session_id:
        state = SessionState.load(session_id)
        if not _Budget(MAX_SESSION_BYTES - state.injected_bytes).take(text):
            return None
        state.injected_bytes += len(text.encode("utf-8"))
        state.save()
    return text


@contextmanager
def time_budget(seconds: float) -> Iterator[None]:
    """Raise :class:`HookTimeout` in the main thread once ``seconds`` have passed."""

    def expire(signum: int, frame: FrameType | None) -> None:
        raise HookTimeout(f"no answer within {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def hook_main(read_stdin: Callable[[], str], options: HookOptions) -> dict[str, Any] | None:
    """Run one hook event within the budget; any failure is logged and yields None."""
    started = time.monotonic()
    try:
        with time_budget(options.timeout):
            return run(read_stdin(), options)
    except Exception as exc:
        log.warning(
            "hook_gave_nothing",
            reason=f"{type(exc).__name__}: {exc}",
            elapsed_ms=round((time.monotonic() - started) * 1000),
        )
        return None
