"""A whole Claude Code transcript as turns: each user prompt and what the agent did after it.

For ``memoryd why`` and ``memoryd eval``: read from the start (up to :data:`MAX_BYTES`).
A turn starts at a record the user typed (not a tool result, a meta record, a compaction
summary, a subagent's task or a slash command's echo) and gives the files the agent
``Read``, what Claude Code's recall and memoryd's hook gave, the assistant's text, and
what the hook saw just before the prompt. Unreadable or garbled lines are skipped.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from memoryd.bounded_read import open_regular, read_fd
from memoryd.claude_folders import Environ, claude_base
from memoryd.integrations._transcript import Seen, Tracker

MAX_BYTES = 64 * 1024 * 1024
HEAD_BYTES = 1024 * 1024  # where a transcript's first prompt is looked for
_NOT_TYPED = ("isMeta", "isCompactSummary", "isSidechain")
_COMMAND_ECHOES = ("<command-", "<local-command-")  # a slash command and its output
# How memoryd's hook names each memory it gives (:func:`memoryd._delivery.memory_block`).
_HEADING = re.compile(r"^## .*? \((/.+?\.md)\)$", re.MULTILINE)
_POINTER = re.compile(r"^- (/.+?\.md) \(not shown", re.MULTILINE)


class Turn(NamedTuple):
    """A prompt; the paths the agent ``Read``, Claude Code's recall attached and memoryd's
    hook gave in its turn; the assistant's text; what the hook saw just before it."""

    prompt: str
    read: list[str]
    recalled: list[str]
    injected: list[str]
    answer: str
    before: Seen


def read_transcript(path: Path, limit: int = MAX_BYTES) -> list[Mapping[str, object]]:
    """The JSON object records in a transcript's first ``limit`` bytes; [] when unreadable."""
    try:
        fd = open_regular(str(path))
    except OSError:
        return []
    try:
        data, _more = read_fd(fd, limit)
    except OSError:
        return []
    finally:
        os.close(fd)
    records: list[Mapping[str, object]] = []
    for line in data.split(b"\n"):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            records.append(entry)
    return records


def prompt_text(entry: Mapping[str, object]) -> str | None:
    """The text a user typed, when ``entry`` is such a record; None for anything else."""
    if entry.get("type") != "user" or any(entry.get(k) for k in _NOT_TYPED):
        return None
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
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
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if entry.get("type") != "assistant" or not isinstance(content, list):
        return ""
    return "\n".join(
        b["text"]
        for b in content
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    )


def hook_gave(entry: Mapping[str, object]) -> list[str]:
    """The memory paths in a ``hook_additional_context`` record of memoryd's hook."""
    attachment = entry.get("attachment") if entry.get("type") == "attachment" else None
    if not isinstance(attachment, dict) or attachment.get("type") != "hook_additional_context":
        return []
    content = attachment.get("content")
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
    for entry in read_transcript(path):
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
    """The working directory of the transcript's first prompt that names one (from its head)."""
    for entry in read_transcript(path, HEAD_BYTES):
        cwd = entry.get("cwd")
        if prompt_text(entry) is not None and isinstance(cwd, str) and cwd:
            return cwd
    return None


def transcript_of(session_id: str, environ: Environ | None = None) -> Path | None:
    """The transcript of ``session_id`` under Claude Code's ``projects/``, if there is one."""
    if not session_id or "/" in session_id or session_id.startswith("."):
        return None
    found = sorted((claude_base(environ) / "projects").glob(f"*/{session_id}.jsonl"))
    return found[0] if found else None


def transcripts_in(folder: Path) -> list[Path]:
    """The ``*.jsonl`` transcripts in ``folder`` and its direct subfolders (a ``projects/``)."""
    found = [p for p in folder.glob("*.jsonl") if p.is_file()]
    found += [p for p in folder.glob("*/*.jsonl") if p.is_file()]
    return sorted(found)
