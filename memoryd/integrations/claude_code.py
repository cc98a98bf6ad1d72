"""``memoryd hook claude-code``: memories for Claude Code, without ever getting in its way.

One event JSON object on stdin; extra context as ``hookSpecificOutput`` on stdout.
``UserPromptSubmit`` injects ``select``'s picks (passing what the session has seen as
``surfaced``) within a per-session byte budget; ``SessionStart`` (not ``resume``) gives the
folder's newest session's resume line and summary, and ``compact`` starts the budget over.
The whole process has a 2 s budget counted from its start; every failure ends with exit 0,
nothing on stdout or stderr (Claude Code keeps stderr) and a line in ``--log-file`` or
``$MEMORYD_HOOK_LOG`` (also stderr with ``MEMORYD_HOOK_DEBUG=1``). Imports are stdlib-only.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, NamedTuple

from memoryd._delivery import cap_text, memory_block, memory_text
from memoryd.claude_folders import memory_folder, project_dir
from memoryd.errors import DaemonTimeout, InvalidParams, RequestError
from memoryd.integrations._hook_state import (
    STALLED_WAIT_S,
    DaemonStall,
    HookFailures,
    SessionState,
    in_directory,
)
from memoryd.integrations._transcript import scan
from memoryd.ipc.client import Client
from memoryd.paths import SESSION_FILENAME, session_stamp_problem

if TYPE_CHECKING:
    from memoryd.replies import SelectResult

MAX_SESSION_BYTES = 60 * 1024
MIN_USEFUL_BYTES = 256
MAX_QUERY_CHARS = 20_000
DEFAULT_TIMEOUT = 2.0
OUTPUT_RESERVE_S = 0.1  # of the budget, kept for reading the memories and writing
SESSION_START_SHARE = 0.5  # Claude Code runs the prompt's hook right after SessionStart
ANSWERED_CODES = frozenset({"not_found", "invalid_params", "not_a_file"})  # not failures
HINT_PARAMS = frozenset({"cwd", "timeout_ms"})  # an older daemon may refuse them
MAX_STDIN_BYTES = 8 * 1024 * 1024
MAX_LOG_BYTES = 1024 * 1024


class HookTimeout(Exception):
    """The hook's time budget ran out."""


def started_ago() -> float:
    """Seconds since the kernel started this process (``/proc/self/stat``); 0 if unknown."""
    try:
        with open("/proc/self/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        ticks = int(fields[19])
        now = time.clock_gettime(time.CLOCK_BOOTTIME)
        return max(0.0, now - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, AttributeError):
        return 0.0


def read_stdin() -> str:
    """All of stdin as text, refusing more than :data:`MAX_STDIN_BYTES`."""
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = os.read(0, 1024 * 1024)
        if not chunk:
            break
        size += len(chunk)
        if size > MAX_STDIN_BYTES:
            raise ValueError(f"the event on stdin is over {MAX_STDIN_BYTES // (1024 * 1024)} MiB")
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", errors="replace")


@contextmanager
def time_budget(seconds: float) -> Iterator[None]:
    """Raise :class:`HookTimeout` in the main thread once ``seconds`` have passed."""

    def expire(signum: int, frame: FrameType | None) -> None:
        raise HookTimeout("the hook's time budget ran out")

    if seconds <= 0:
        raise HookTimeout("the hook's time budget was spent before it started")
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class HookLog:
    """The hook's diagnostics: to a log file (moved to ``.1`` when full), stderr only if asked."""

    def __init__(self, path: str | None) -> None:
        self.path = path or os.environ.get("MEMORYD_HOOK_LOG") or None
        self.debug_on = os.environ.get("MEMORYD_HOOK_DEBUG", "") not in ("", "0")

    def debug(self, event: str, **fields: Any) -> None:
        if self.debug_on:
            self._write("debug", event, fields)

    def info(self, event: str, **fields: Any) -> None:
        self._write("info", event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._write("warning", event, fields)

    def _write(self, level: str, event: str, fields: Mapping[str, object]) -> None:
        if not self.path and not self.debug_on:
            return
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        record = {"timestamp": stamp, "level": level, "event": event, "pid": os.getpid(), **fields}
        line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
        if self.debug_on:
            sys.stderr.write(line)
            sys.stderr.flush()
        if self.path:
            self._append(self.path, line.encode("utf-8"))

    @staticmethod
    def _append(path: str, data: bytes) -> None:
        with contextlib.suppress(OSError):
            if os.path.getsize(path) > MAX_LOG_BYTES:
                os.replace(path, path + ".1")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError:
            return
        with contextlib.suppress(OSError):
            os.write(fd, data)
        os.close(fd)


class HookOptions(NamedTuple):
    directory: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    socket: Path | None = None
    log_file: str | None = None


class Answer(NamedTuple):
    """The hook's stdout object, and what to record as shown once it is written."""

    output: dict[str, Any]
    state: SessionState | None
    shown: list[str]
    injected_bytes: int


class _Event(NamedTuple):
    name: str
    raw: dict[str, Any]
    cwd: str
    directory: str
    checkout: str
    state: SessionState | None
    deadline: float
    options: HookOptions
    log: HookLog

    @contextmanager
    def daemon(self, share: float = 1.0) -> Iterator[Client]:
        """A client spending at most ``share`` of the budget; stalls and failures recorded."""
        left = self.deadline - time.monotonic() - OUTPUT_RESERVE_S
        left = min(left, self.options.timeout * share)
        if left <= 0:
            raise HookTimeout("no time left to ask the daemon")
        client = Client(self.options.socket, timeout=left)
        stall = DaemonStall(str(client.socket_path))
        if stall.recent:
            client.timeout = min(left, STALLED_WAIT_S)
        failures = HookFailures()
        try:
            with client:
                yield client
        except (DaemonTimeout, HookTimeout):
            stall.mark()
            failures.failed(str(client.socket_path), "the daemon did not answer in time")
            raise
        except Exception as exc:
            if isinstance(exc, RequestError) and exc.code in ANSWERED_CODES:
                failures.answered()
            else:
                failures.failed(str(client.socket_path), f"{type(exc).__name__}: {exc}")
            raise
        failures.answered()
        if stall.recent:
            stall.clear()


def project_slug(cwd: str) -> str | None:
    """The basename of ``cwd`` as a session-file project slug, or None if nothing is left."""
    name = os.path.basename(cwd.rstrip("/\\")).lower()
    slug = re.sub(r"[^a-z0-9._-]+", "-", name)
    slug = re.sub(r"\.{2,}", ".", slug).lstrip("._-")[:100]
    return slug or None


def newest_session_project(directory: str) -> str | None:
    """The project of the folder's newest session file whose time stamp is usable."""
    try:
        found = [m for n in os.listdir(directory) if (m := SESSION_FILENAME.match(n))]
    except OSError:
        return None
    usable = [m for m in found if session_stamp_problem(m.group(1)) is None]
    newest = max(usable, key=lambda m: m.group(0), default=None)
    return newest.group(2) if newest else None


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


def run(stdin_text: str, options: HookOptions, deadline: float, log: HookLog) -> Answer | None:
    """What to answer one event with, or None for "say nothing"."""
    raw = json.loads(stdin_text)
    if not isinstance(raw, dict):
        raise ValueError("hook input is not a JSON object")
    name = raw.get("hook_event_name")
    if name not in ("UserPromptSubmit", "SessionStart"):
        log.info("hook_skipped", reason="event not handled", hook_event_name=name)
        return None
    cwd = raw["cwd"] if isinstance(raw.get("cwd"), str) and raw["cwd"] else os.getcwd()
    transcript = raw.get("transcript_path")
    if options.directory:
        directory, checkout = options.directory, cwd
    else:
        start = project_dir(cwd, transcript if isinstance(transcript, str) else None, os.environ)
        folder = memory_folder(start)
        directory, checkout = str(folder.directory), folder.checkout
    if not os.path.isdir(directory):
        # Most projects have no memory folder: that is the normal case, not a warning.
        log.debug("hook_skipped", reason="no memory directory", dir=directory)
        return None
    session_id = raw.get("session_id")
    state = SessionState(session_id) if isinstance(session_id, str) and session_id else None
    event = _Event(
        name, raw, cwd, os.path.realpath(directory), checkout, state, deadline, options, log
    )
    return _on_prompt(event) if name == "UserPromptSubmit" else _on_session_start(event)


def _output(event: _Event, text: str, shown: list[str]) -> Answer:
    out = {"hookSpecificOutput": {"hookEventName": event.name, "additionalContext": text}}
    return Answer(out, event.state, shown, len(text.encode("utf-8")))


def _on_prompt(event: _Event) -> Answer | None:
    prompt = event.raw.get("prompt")
    log, state, directory = event.log, event.state, event.directory
    if not isinstance(prompt, str) or not prompt.strip():
        log.info("hook_skipped", reason="empty prompt")
        return None
    budget = _Budget(MAX_SESSION_BYTES - (state.injected_bytes if state else 0))
    if budget.left < MIN_USEFUL_BYTES:
        log.info("hook_skipped", reason="session context budget spent")
        return None
    transcript = event.raw.get("transcript_path")
    seen = scan(transcript if isinstance(transcript, str) else None)
    surfaced = (
        state.surfaced_in(directory, seen.files) if state else in_directory(seen.files, directory)
    )
    with event.daemon() as client:
        ask: dict[str, Any] = {
            "surfaced": surfaced,
            "recent_tools": seen.tools,
            "session_id": event.raw.get("session_id"),
            "timeout_ms": max(1, int(client.timeout * 1000)),
        }
        if isinstance(event.raw.get("cwd"), str):
            ask["cwd"] = event.raw["cwd"]
        result = _select(lambda **p: client.select(prompt[:MAX_QUERY_CHARS], directory, **p), ask)
    if result.get("fallback"):
        log.info("hook_ranker_fallback", fallback=result["fallback"], run_id=result["run_id"])
    header = f"memoryd: memories from {directory} that may help with this prompt.\n"
    if not result["selected"]:
        log.info("hook_skipped", reason="no memory clearly helps", run_id=result["run_id"])
        return None
    if not budget.take(header):
        return None
    parts, shown = [header], []
    for entry in result["selected"]:
        try:  # redacted; never through a link, nor outside the folder
            block = memory_block(entry, memory_text(entry["path"], directory))
        except OSError as exc:
            log.info("memory_unreadable", path=entry["path"], error=str(exc))
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
    return _output(event, "".join(parts), shown)


def _select(ask: Callable[..., SelectResult], params: Mapping[str, object]) -> SelectResult:
    """``ask(**params)``, again without the :data:`HINT_PARAMS` an older daemon refused."""
    try:
        return ask(**params)
    except InvalidParams as exc:
        fields = exc.data.get("fields") if isinstance(exc.data, dict) else None
        if not isinstance(fields, list) or not fields or not set(fields) <= HINT_PARAMS:
            raise
        return ask(**{k: v for k, v in params.items() if k not in fields})


def _on_session_start(event: _Event) -> Answer | None:
    source = event.raw.get("source")
    log, state = event.log, event.state
    if source == "resume":
        log.info("hook_skipped", reason="resumed: the earlier context is in the transcript")
        return None
    if source == "compact" and state is not None and state.injected_bytes:
        # What memoryd injected before was summarised away: the budget starts over.
        state.injected_bytes = 0
        state.save()
    project = newest_session_project(event.directory) or project_slug(event.checkout)
    if project is None:
        log.info("hook_skipped", reason="no session memory and no project name", cwd=event.cwd)
        return None
    with event.daemon(SESSION_START_SHARE) as client:
        last = client.load_last(event.directory, project)
    if not last["found"]:
        log.info("hook_skipped", reason=last["message"])
        return None
    from memoryd.sessions._sections import parse_sections  # noqa: PLC0415 - not per prompt

    summary = parse_sections(last["content"]).summary_text
    text = f"memoryd: {last['resume_line']}\nLast session file: {last['path']}\n"
    if summary:
        text += f"Session summary: {cap_text(summary)}\n"
    if state is not None and not _Budget(MAX_SESSION_BYTES - state.injected_bytes).take(text):
        return None
    return _output(event, text, [])


def hook_main(options: HookOptions) -> None:
    """Run the event on stdin within the budget; write its answer, or nothing on any failure."""
    log = HookLog(options.log_file)
    left = options.timeout - started_ago()
    deadline = time.monotonic() + left
    try:
        with time_budget(left):
            answer = run(read_stdin(), options, deadline, log)
    except Exception as exc:
        log.warning(
            "hook_gave_nothing",
            reason=f"{type(exc).__name__}: {exc}",
            elapsed_ms=round((options.timeout - (deadline - time.monotonic())) * 1000),
        )
        return
    if answer is None:
        return
    if answer.state is not None:
        try:
            answer.state.record(answer.shown, answer.injected_bytes)
        except OSError as exc:
            log.warning("session_state_not_saved", error=str(exc))
    try:
        sys.stdout.write(json.dumps(answer.output, ensure_ascii=False) + "\n")
        sys.stdout.flush()
    except OSError as exc:
        log.warning("hook_output_lost", error=str(exc))
