"""What the Claude Code hook already injected into one session, kept on disk.

Each hook invocation is a fresh process, so the 60 KB per-session budget needs
state that outlives it. A small JSON file per session under
``$XDG_STATE_HOME/memoryd/hook-sessions/`` holds the bytes injected so far and
the memory files shown. The file (not the daemon) is the source of truth for
the budget because it must hold across daemon restarts; the shown files are
also passed to ``select`` as ``surfaced``, so a restarted daemon (which forgets
its per-session memory) still never repeats a memory in the session.

Sessions are sequential (one prompt at a time), so a plain atomic replace is
enough; files untouched for a week are swept when a new session starts.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from memoryd import paths

KEEP_SECONDS = 7 * 24 * 3600


def state_root() -> Path:
    return paths.state_dir() / "hook-sessions"


@dataclass
class SessionState:
    """Bytes of context injected so far and the memory paths shown, for one session."""

    path: Path
    injected_bytes: int = 0
    shown: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, session_id: str) -> SessionState:
        # Hashing keeps any session id (slashes, dots, length) a safe file name.
        digest = hashlib.sha256(session_id.encode()).hexdigest()[:32]
        path = state_root() / f"{digest}.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            _sweep(state_root())
            return cls(path)
        except (OSError, ValueError):
            return cls(path)
        shown = data.get("shown") if isinstance(data, dict) else None
        injected = data.get("injected_bytes") if isinstance(data, dict) else None
        return cls(
            path,
            injected_bytes=injected if isinstance(injected, int) else 0,
            shown=[s for s in shown if isinstance(s, str)] if isinstance(shown, list) else [],
        )

    def surfaced_in(self, directory: str) -> list[str]:
        """File names already shown from ``directory`` (what ``select`` calls surfaced)."""
        return [os.path.basename(p) for p in self.shown if os.path.dirname(p) == directory]

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        body = json.dumps({"injected_bytes": self.injected_bytes, "shown": self.shown})
        fd, tmp = tempfile.mkstemp(prefix=".state-", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(body)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


def _sweep(root: Path) -> None:
    """Drop state files of sessions idle for a week; failures only leave clutter."""
    cutoff = time.time() - KEEP_SECONDS
    with contextlib.suppress(OSError):
        for entry in os.scandir(root):
            with contextlib.suppress(OSError):
                if entry.name.endswith(".json") and entry.stat().st_mtime < cutoff:
                    os.unlink(entry.path)
