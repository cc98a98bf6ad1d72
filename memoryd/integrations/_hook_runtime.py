"""The hook's process discipline: a budget counted from process start, bounded stdin, quiet logs.

Nothing goes to stderr (Claude Code keeps it in the transcript) unless ``MEMORYD_HOOK_DEBUG=1``;
diagnostics go to ``--log-file`` or ``$MEMORYD_HOOK_LOG`` as JSON lines. Standard library only.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import FrameType
from typing import Any

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


def read_stdin(fd: int = 0, limit: int = MAX_STDIN_BYTES) -> str:
    """All of stdin as text, refusing more than ``limit`` bytes."""
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = os.read(fd, 1024 * 1024)
        if not chunk:
            break
        size += len(chunk)
        if size > limit:
            raise ValueError(f"the event on stdin is over {limit // (1024 * 1024)} MiB")
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
        try:
            if os.path.getsize(path) > MAX_LOG_BYTES:
                os.replace(path, path + ".1")
        except OSError:
            pass
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError:
            return
        with contextlib.suppress(OSError):
            os.write(fd, data)
        os.close(fd)
