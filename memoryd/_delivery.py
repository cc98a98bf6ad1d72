"""A memory as an agent is handed it (hook and MCP alike): redacted, capped in lines and
bytes with a marker saying how much was cut, under a heading with its path, age and any
staleness caution."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from memoryd.bounded_read import open_memory, read_fd

MAX_FILE_BYTES = 4 * 1024
MAX_FILE_LINES = 200
READ_BYTES = 64 * 1024
"""How much of a memory file is read: the cap after redaction, with room to spare."""
STALE_AFTER_DAYS = 1.0


def cap_text(text: str, total_bytes: int | None = None) -> str:
    """At most :data:`MAX_FILE_LINES` lines and :data:`MAX_FILE_BYTES` UTF-8 bytes, saying what
    was cut; ``total_bytes`` is the whole file's size when ``text`` is only its head."""
    lines = text.splitlines()
    whole = "\n".join(lines)
    kept = "\n".join(lines[:MAX_FILE_LINES])
    data = kept.encode("utf-8")
    if len(data) > MAX_FILE_BYTES:
        kept = data[:MAX_FILE_BYTES].decode("utf-8", errors="ignore")
        kept = kept.rsplit("\n", 1)[0] if "\n" in kept else kept
    size = len(whole.encode("utf-8"))
    if kept == whole and (total_bytes is None or total_bytes <= size):
        return kept
    dropped = max(size, total_bytes or 0) - len(kept.encode("utf-8"))
    # The marker rides on top of the cap: the cap bounds the memory's own text.
    return f"{kept}\n[... {dropped} more bytes cut by memoryd; read the file for the rest]"


def memory_text(path: str, within: str | None = None) -> str:
    """The file's text, redacted and capped; OSError when it cannot be read. A link is
    followed only to a file inside ``within``, the real path of the folder asked about."""
    fd = open_memory(path, within)  # a FIFO or a device is refused too
    try:
        size = os.fstat(fd).st_size
        head, _more = read_fd(fd, READ_BYTES)
    finally:
        os.close(fd)
    # Here, not at the top: a prompt with nothing to show never compiles the patterns.
    from memoryd.indexer.secrets import redact  # noqa: PLC0415

    text = head.decode("utf-8", errors="replace")
    total = size if size > len(head) else None
    return cap_text(redact(text), total)


def memory_block(entry: Mapping[str, Any], text: str) -> str:
    """One selected memory (a ``select`` entry) with its ``text``, as the model reads it."""
    from memoryd.staleness.render import caution  # noqa: PLC0415 - see memory_text

    days = int(entry["age_days"])
    age = f"{days} day{'' if days == 1 else 's'} old."
    if entry["age_days"] > STALE_AFTER_DAYS:
        age += " It may be stale: check it against the current code before relying on it."
    if entry.get("type"):
        age = f"A {entry['type']} memory, {age[0].lower()}{age[1:]}"
    warning = caution(entry.get("staleness"))
    if warning:
        age += f"\n{warning}"
    title = entry.get("name") or entry["filename"]
    return f"\n## {title} ({entry['path']})\n{age}\n\n{text}\n"
