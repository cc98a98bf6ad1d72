"""What Claude Code transcripts say: for the hook, the tail; for ``why`` and ``eval``, turns.

The tail gives the tools used last (and the program a ``Bash`` call ran) and the memory files
already seen (Claude Code's recall, files ``Read``/``Edit``/``Write``). A turn starts at a record
the user typed. Only regular files are read; what is missing or garbled says nothing.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from memoryd.bounded_read import open_regular, read_fd
from memoryd.claude_folders import claude_base

TAIL_BYTES = 1024 * 1024
MAX_BYTES = 64 * 1024 * 1024
HEAD_BYTES = 1024 * 1024  # where a transcript's first prompt is looked for
LAST_CALLS = 10
FILE_TOOLS = frozenset({"Read", "Edit", "Write", "MultiEdit"})
_SKIP_WORDS = frozenset({"sudo", "env", "time", "nice", "nohup", "exec", "command"})
_MARKERS = (b'"tool_use"', b'"relevant_memories"')


class Seen(NamedTuple):
    """Recent tool names (newest first) and the files the model has seen."""

    tools: list[str]
    files: list[str]


class ToolCall(NamedTuple):
    """A ``tool_use`` block: the tool's name and its input (any JSON)."""

    name: str
    input: object


def _read(path: str, limit: int, *, tail: bool = False) -> bytes:
    """Up to ``limit`` bytes of a regular file, its head or its tail (from a line start)."""
    try:
        fd = open_regular(path)
    except OSError:
        return b""
    try:
        start = max(0, os.fstat(fd).st_size - limit) if tail else 0
        os.lseek(fd, start, os.SEEK_SET)
        data, _more = read_fd(fd, limit)
    except OSError:
        return b""
    finally:
        os.close(fd)
    return data.split(b"\n", 1)[1] if start and b"\n" in data else data


def _records(data: bytes, markers: tuple[bytes, ...] = (b"",)) -> list[Mapping[str, object]]:
    """The JSON object lines of ``data`` that hold one of ``markers``."""
    out: list[Mapping[str, object]] = []
    for line in data.split(b"\n"):
        if not any(marker in line for marker in markers):
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            out.append(entry)
    return out


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

    def seen(self) -> Seen:
        names: list[str] = []
        for call in reversed(self.calls[-LAST_CALLS:]):
            names.append(call.name)
            program = _bash_program(call)
            if program:
                names.append(program)
        return Seen(list(dict.fromkeys(names)), list(dict.fromkeys(self.files)))


def scan(path: str | None) -> Seen:
    """What the tail of the transcript at ``path`` shows."""
    if not path:
        return Seen([], [])
    tracker = Tracker()
    for entry in _records(_read(path, TAIL_BYTES, tail=True), _MARKERS):
        tracker.add(entry)
    return tracker.seen()


def _attachment(entry: Mapping[str, object], kind: str) -> dict[str, object]:
    found = entry.get("attachment") if entry.get("type") == "attachment" else None
    return found if isinstance(found, dict) and found.get("type") == kind else {}


def _content(entry: Mapping[str, object]) -> object:
    message = entry.get("message")
    return message.get("content") if isinstance(message, dict) else None


def _recalled(entry: Mapping[str, object]) -> list[str]:
    """Paths in a ``relevant_memories`` attachment (Claude Code's own per-prompt recall)."""
    memories = _attachment(entry, "relevant_memories").get("memories")
    if not isinstance(memories, list):
        return []
    return [m["path"] for m in memories if isinstance(m, dict) and isinstance(m.get("path"), str)]


def _tool_uses(entry: Mapping[str, object]) -> list[ToolCall]:
    content = _content(entry)
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


_NOT_TYPED = ("isMeta", "isCompactSummary", "isSidechain")
_COMMAND_ECHOES = ("<command-", "<local-command-")  # a slash command and its output
# How memoryd's hook names each memory it gives (see memory_block).
_HEADING = re.compile(r"^## .*? \((/.+?\.md)\)$", re.MULTILINE)
_POINTER = re.compile(r"^- (/.+?\.md) \(not shown", re.MULTILINE)


class Turn(NamedTuple):
    """A prompt, the paths read, recalled and injected in its turn, the answer, what was seen."""

    prompt: str
    read: list[str]
    recalled: list[str]
    injected: list[str]
    answer: str
    before: Seen


def prompt_text(entry: Mapping[str, object]) -> str | None:
    """The text a user typed (not a tool result, meta record or command echo), else None."""
    if entry.get("type") != "user" or any(entry.get(k) for k in _NOT_TYPED):
        return None
    content = _content(entry)
    if isinstance(content, str):
        return content if content.strip() and not content.startswith(_COMMAND_ECHOES) else None
    if not isinstance(content, list):
        return None
    blocks = [b for b in content if isinstance(b, dict)]
    if any(b.get("type") == "tool_result" for b in blocks):
        return None
    text = "\n".join(b["text"] for b in blocks if isinstance(b.get("text"), str))
    return text if text.strip() and not text.startswith(_COMMAND_ECHOES) else None


def _answer_text(entry: Mapping[str, object]) -> str:
    content = _content(entry)
    if entry.get("type") != "assistant" or not isinstance(content, list):
        return ""
    return "\n".join(
        b["text"]
        for b in content
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    )


def hook_gave(entry: Mapping[str, object]) -> list[str]:
    """The memory paths in a ``hook_additional_context`` record of memoryd's hook."""
    content = _attachment(entry, "hook_additional_context").get("content")
    texts = content if isinstance(content, list) else [content]
    found: list[str] = []
    for text in texts:
        if isinstance(text, str) and text.startswith("memoryd: "):
            found += _HEADING.findall(text) + _POINTER.findall(text)
    return found


def turns(path: Path) -> list[Turn]:
    """The transcript's turns, oldest first."""
    tracker = Tracker()
    given: list[str] = []  # what memoryd's hook gave so far: seen, as its own record says
    out: list[Turn] = []
    for entry in _records(_read(str(path), MAX_BYTES)):
        prompt = prompt_text(entry)
        if prompt is not None:
            seen = tracker.seen()
            before = Seen(seen.tools, list(dict.fromkeys(seen.files + given)))
            out.append(Turn(prompt, [], [], [], "", before))
            continue
        recalled, read = tracker.add(entry)
        gave = hook_gave(entry)
        given += gave
        if out:
            out[-1].recalled.extend(recalled)
            out[-1].read.extend(read)
            out[-1].injected.extend(gave)
            answer = _answer_text(entry)
            if answer:
                out[-1] = out[-1]._replace(answer=f"{out[-1].answer}\n{answer}".lstrip("\n"))
    return out


def first_cwd(path: Path) -> str | None:
    """The working directory of the transcript's first prompt that names one."""
    for entry in _records(_read(str(path), HEAD_BYTES)):
        cwd = entry.get("cwd")
        if prompt_text(entry) is not None and isinstance(cwd, str) and cwd:
            return cwd
    return None


def transcript_of(session_id: str) -> Path | None:
    """The transcript of ``session_id`` under Claude Code's ``projects/``, if there is one."""
    if not session_id or "/" in session_id or session_id.startswith("."):
        return None
    found = sorted((claude_base() / "projects").glob(f"*/{session_id}.jsonl"))
    return found[0] if found else None


def transcripts_in(folder: Path) -> list[Path]:
    """The ``*.jsonl`` transcripts in ``folder`` and its direct subfolders."""
    found = [p for p in folder.glob("*.jsonl") if p.is_file()]
    found += [p for p in folder.glob("*/*.jsonl") if p.is_file()]
    return sorted(found)
