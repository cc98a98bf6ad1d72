"""The hook's process discipline: a budget counted from process start, bounded input, quiet logs.

:func:`time_budget` arms a timer for what is left of the budget since the kernel started
the process (:func:`started_ago`), interrupting any wait. Stdin is read up to
:data:`MAX_STDIN_BYTES`. Nothing goes to stderr (Claude Code stores it in the transcript):
diagnostics go to ``--log-file`` or ``$MEMORYD_HOOK_LOG`` (JSON lines, the old file moved
to ``<file>.1`` past :data:`MAX_LOG_BYTES`), and to stderr only with ``MEMORYD_HOOK_DEBUG=1``.
Standard library only.
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


class InputTooLarge(ValueError):
    """The event on stdin is over :data:`MAX_STDIN_BYTES`."""


def started_ago() -> float:
    """Seconds since the kernel started this process (``/proc/self/stat`` field 22, in clock
    ticks since boot, against ``CLOCK_BOOTTIME``); 0 when that cannot be read."""
    try:
        with open("/proc/self/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        ticks = int(fields[19])
        now = time.clock_gettime(time.CLOCK_BOOTTIME)
        return max(0.0, now - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, AttributeError):
        return 0.0


def read_stdin(fd: int = 0, limit: int = MAX_STDIN_BYTES) -> str:
    """All of stdin as text, refusing more than ``limit`` bytes (memory stays bounded)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = os.read(fd, 1024 * 1024)
        if not chunk:
            break
        size += len(chunk)
        if size > limit:
            raise InputTooLarge(f"the event on stdin is over {limit // (1024 * 1024)} MiB")
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
    """Where the hook's diagnostics go: a log file when configured, stderr only when asked."""

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
        """Append one line; a log that cannot be written is dropped, never a failure."""
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
