"""What each agent session was shown by memoryd, on disk: shared by the hook and ``memoryd mcp``.

One small JSON file per session (bytes injected, files shown), swept after a week idle;
beside them the daemon's last stall and the hook's failures in a row. Standard library only.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from pathlib import Path

from memoryd import paths

KEEP_SECONDS = 7 * 24 * 3600
STALL_WINDOW_S = 60.0
STALLED_WAIT_S = 0.2


def state_root() -> Path:
    return paths.state_dir() / "hook-sessions"


class SessionState:
    """Bytes of context injected so far and the memory paths shown, for one session."""

    def __init__(self, session_id: str) -> None:
        """The session's record as saved (a new session's first sweeps out idle ones)."""
        self.path = state_root() / f"{file_stem(session_id)}.json"
        if not os.path.exists(self.path):
            _sweep(state_root())
        data = _read_json(self.path)
        injected, shown = data.get("injected_bytes"), data.get("shown")
        self.injected_bytes = injected if isinstance(injected, int) else 0
        self.shown = [s for s in shown if isinstance(s, str)] if isinstance(shown, list) else []

    def surfaced_in(self, directory: str, seen: list[str] | None = None) -> list[str]:
        """File names shown from ``directory``, and those of ``seen`` (other paths) in it."""
        names = [os.path.basename(p) for p in self.shown if os.path.dirname(p) == directory]
        names += in_directory(seen or [], directory)
        return list(dict.fromkeys(names))

    def record(self, paths: list[str], injected_bytes: int = 0) -> None:
        self.shown.extend(p for p in paths if p not in self.shown)
        self.injected_bytes += injected_bytes
        self.save()

    def save(self) -> None:
        body = json.dumps({"injected_bytes": self.injected_bytes, "shown": self.shown})
        _write_atomic(self.path, body)


def _read_json(path: Path) -> dict[str, object]:
    """The JSON object in ``path``; {} when it is missing, unreadable or not an object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_atomic(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.parent / f".state-{os.getpid()}-{os.urandom(6).hex()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(body)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class DaemonStall:
    """A daemon's last stall: for :data:`STALL_WINDOW_S` hooks wait on it :data:`STALLED_WAIT_S`."""

    def __init__(self, socket: str) -> None:
        self.socket = socket
        self.path = state_root() / "daemon-stall.json"
        data = _read_json(self.path)
        at = data.get("at") if data.get("socket") == socket else None
        at = at if isinstance(at, int | float) and not isinstance(at, bool) else 0.0
        self.recent = 0 <= time.time() - at < STALL_WINDOW_S

    def mark(self) -> None:
        with contextlib.suppress(OSError):
            _write_atomic(self.path, json.dumps({"socket": self.socket, "at": time.time()}))

    def clear(self) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self.path)


class HookFailures:
    """The hook's requests the daemon failed in a row, and why; removed on the next answer."""

    def __init__(self) -> None:
        self.path = paths.state_dir() / "hook-failures.json"

    def read(self) -> dict[str, object] | None:
        data = _read_json(self.path)
        return data if isinstance(data.get("failures"), int) else None

    def message(self) -> str | None:
        """The record in words for ``status`` and ``doctor``; None when there is none."""
        data = self.read()
        if data is None:
            return None

        def when(key: str) -> str:
            at = data.get(key)
            if not isinstance(at, (int, float)):
                return "?"
            return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))

        return (
            f"the Claude Code hook's last {data['failures']} request(s) to the daemon failed, "
            f"from {when('first_at')} to {when('last_at')}: no memories reached the agent "
            f"meanwhile (last error: {data.get('error')}; socket {data.get('socket')})"
        )

    def failed(self, socket: str, error: str) -> None:
        old = self.read() or {}
        now = time.time()
        count = old.get("failures", 0)
        body = {
            "failures": (count if isinstance(count, int) else 0) + 1,
            "first_at": old.get("first_at", now),
            "last_at": now,
            "error": error[:500],
            "socket": socket,
        }
        with contextlib.suppress(OSError):
            _write_atomic(self.path, json.dumps(body))

    def answered(self) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self.path)


_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")


def file_stem(session_id: str) -> str:
    """A safe file name for any session id: itself when safe, else a hash."""
    if _SAFE_ID.fullmatch(session_id):
        return f"s-{session_id}"
    import hashlib  # noqa: PLC0415 - loads OpenSSL; only odd ids need it

    return hashlib.sha256(session_id.encode()).hexdigest()[:32]


def in_directory(paths: list[str], directory: str) -> list[str]:
    """The file names of those ``paths`` that lie directly in ``directory`` (a real path)."""
    out: list[str] = []
    for path in paths:
        parent = os.path.dirname(path)
        if parent == directory or os.path.realpath(parent) == directory:
            out.append(os.path.basename(path))
    return out


def _sweep(root: Path) -> None:
    cutoff = time.time() - KEEP_SECONDS
    with contextlib.suppress(OSError):
        for entry in os.scandir(root):
            with contextlib.suppress(OSError):
                if entry.name.endswith(".json") and entry.stat().st_mtime < cutoff:
                    os.unlink(entry.path)
