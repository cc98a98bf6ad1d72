"""The tools an agent used last, read from a Claude Code transcript.

``select`` uses ``recent_tools`` to drop usage docs for tools the agent is
already driving, so the hook needs the latest tool calls of the session. A
transcript is JSONL: each line a message whose ``message.content`` list may
hold ``{"type": "tool_use", "name": ..., "input": ...}`` blocks.

Two choices keep this cheap and useful:

* Only the file's tail is read. Transcripts grow to many megabytes and the
  hook has a two-second budget; the last calls are at the end anyway.
* A ``Bash`` call also contributes the program it ran (``pytest -x`` gives
  ``pytest``), because memories describe CLIs, not the ``Bash`` tool itself.
  Claude Code's own tool names stay in the list as they are; ``select``
  ignores capitalised names when matching usage docs.

A transcript that is missing, unreadable or garbled yields no tools: this is a
hint for ranking, never a reason to fail.
"""

from __future__ import annotations

import json
import os
import shlex
from typing import Any

from memoryd.bounded_read import open_regular, read_fd

TAIL_BYTES = 256 * 1024
LAST_CALLS = 10
_SKIP_WORDS = frozenset({"sudo", "env", "time", "nice", "nohup", "exec", "command"})


def recent_tools(path: str | None, *, last_calls: int = LAST_CALLS) -> list[str]:
    """Tool names of the last ``last_calls`` tool calls, newest first, without repeats."""
    if not path:
        return []
    try:
        lines = _tail_lines(path)
    except OSError:
        return []
    calls: list[dict[str, Any]] = []
    for line in lines:
        calls.extend(_tool_uses(line))
    names: list[str] = []
    for call in reversed(calls[-last_calls:]):
        names.append(str(call["name"]))
        program = _bash_program(call)
        if program:
            names.append(program)
    return list(dict.fromkeys(names))


def _tail_lines(path: str) -> list[str]:
    fd = open_regular(path)  # a FIFO planted there must not hang the hook
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - TAIL_BYTES)
        os.lseek(fd, start, os.SEEK_SET)
        data, _more = read_fd(fd, TAIL_BYTES)
    finally:
        os.close(fd)
    lines = data.decode("utf-8", errors="replace").splitlines()
    # Reading from the middle of the file cuts the first line in half.
    return lines[1:] if start else lines


def _tool_uses(line: str) -> list[dict[str, Any]]:
    try:
        entry = json.loads(line)
    except ValueError:
        return []
    message = entry.get("message") if isinstance(entry, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return []
    return [
        block
        for block in content
        if isinstance(block, dict)
        and block.get("type") == "tool_use"
        and isinstance(block.get("name"), str)
        and block["name"]
    ]


def _bash_program(call: dict[str, Any]) -> str | None:
    """``FOO=1 sudo ./venv/bin/pytest -x`` -> ``pytest``; None when it is not a Bash call."""
    if call["name"] != "Bash":
        return None
    tool_input = call.get("input")
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
