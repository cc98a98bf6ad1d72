"""What a Claude Code transcript's tail says: the tools used last, the memories already seen.

Tools come from ``tool_use`` blocks (a ``Bash`` call also gives the program it ran:
memories describe CLIs, not the Bash tool); memories seen are those Claude Code's recall
attached (``relevant_memories``) and files the agent read or wrote (``Read``, ``Edit``,
``Write``: ``input.file_path``). Only the last :data:`TAIL_BYTES` of a regular file are
read; a transcript missing, unreadable or garbled says nothing: it is a hint, never a failure.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping
from typing import NamedTuple

from memoryd.bounded_read import open_regular, read_fd

TAIL_BYTES = 1024 * 1024
LAST_CALLS = 10
FILE_TOOLS = frozenset({"Read", "Edit", "Write", "MultiEdit"})
_SKIP_WORDS = frozenset({"sudo", "env", "time", "nice", "nohup", "exec", "command"})
# Lines that can matter, found without parsing the rest.
_MARKERS = (b'"tool_use"', b'"relevant_memories"')


class Seen(NamedTuple):
    """What the transcript's tail shows: recent tool names and files the model has seen."""

    tools: list[str]
    files: list[str]


class ToolCall(NamedTuple):
    """A ``tool_use`` block: the tool's name and its input (any JSON, checked where read)."""

    name: str
    input: object


def read_tail(path: str, limit: int = TAIL_BYTES) -> bytes:
    """Up to ``limit`` bytes from the end of a regular file (from a line start); b"" else."""
    try:
        fd = open_regular(path)
    except OSError:
        return b""
    try:
        start = max(0, os.fstat(fd).st_size - limit)
        os.lseek(fd, start, os.SEEK_SET)
        data, _more = read_fd(fd, limit)
    except OSError:
        return b""
    finally:
        os.close(fd)
    # Reading from the middle of the file cuts the first line in half.
    return data.split(b"\n", 1)[1] if start and b"\n" in data else data


class Tracker:
    """What a transcript has shown so far, fed one record at a time (oldest first)."""

    def __init__(self) -> None:
        self.calls: list[ToolCall] = []
        self.files: list[str] = []

    def add(self, entry: Mapping[str, object]) -> tuple[list[str], list[str]]:
        """Take one record; the memories it recalled and the files the agent ``Read`` in it."""
        recalled = _recalled(entry)
        self.files += recalled
        read: list[str] = []
        for call in _tool_uses(entry):
            self.calls.append(call)
            seen = _file_of(call)
            if seen:
                self.files.append(seen)
                if call.name == "Read":
                    read.append(seen)
        return recalled, read

    def seen(self, last_calls: int = LAST_CALLS) -> Seen:
        """The recent tools (newest first, no repeats) and the files shown seen so far."""
        names: list[str] = []
        for call in reversed(self.calls[-last_calls:]):
            names.append(call.name)
            program = _bash_program(call)
            if program:
                names.append(program)
        return Seen(list(dict.fromkeys(names)), list(dict.fromkeys(self.files)))


def scan(path: str | None, *, last_calls: int = LAST_CALLS) -> Seen:
    """The transcript's recent tools (newest first, no repeats) and the files it shows seen."""
    if not path:
        return Seen([], [])
    tracker = Tracker()
    for line in read_tail(path).split(b"\n"):
        if not any(marker in line for marker in _MARKERS):
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            tracker.add(entry)
    return tracker.seen(last_calls)


def _recalled(entry: Mapping[str, object]) -> list[str]:
    """Paths in a ``relevant_memories`` attachment (Claude Code's own per-prompt recall)."""
    attachment = entry.get("attachment") if entry.get("type") == "attachment" else None
    if not isinstance(attachment, dict) or attachment.get("type") != "relevant_memories":
        return []
    memories = attachment.get("memories")
    if not isinstance(memories, list):
        return []
    return [m["path"] for m in memories if isinstance(m, dict) and isinstance(m.get("path"), str)]


def _tool_uses(entry: Mapping[str, object]) -> list[ToolCall]:
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return []
    return [
        ToolCall(block["name"], block.get("input"))
        for block in content
        if isinstance(block, dict)
        and block.get("type") == "tool_use"
        and isinstance(block.get("name"), str)
        and block["name"]
    ]


def _file_of(call: ToolCall) -> str | None:
    tool_input = call.input
    if call.name not in FILE_TOOLS or not isinstance(tool_input, dict):
        return None
    path = tool_input.get("file_path")
    return path if isinstance(path, str) and os.path.isabs(path) else None


def _bash_program(call: ToolCall) -> str | None:
    """``FOO=1 sudo ./venv/bin/pytest -x`` -> ``pytest``; None when it is not a Bash call."""
    if call.name != "Bash":
        return None
    tool_input = call.input
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if not isinstance(command, str):
        return None
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        words = command.split()
    for word in words:
        if "=" in word.split("/")[0] or word in _SKIP_WORDS or word.startswith("-"):
            continue
        program = os.path.basename(word)
        return program.lower() if program and program[0].isalnum() else None
    return None
