"""Default locations, following the XDG base directory specification, and file names.

Each function reads the environment at call time so tests (and systemd units)
can point memoryd elsewhere with ``XDG_*`` or ``MEMORYD_*`` variables. The
module is light (no third-party imports) because the client path uses it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

SESSION_FILENAME = re.compile(r"^(\d{4}-\d{2}-\d{2}-\d{2}-\d{2})-(.+)\.md$")
"""A session memory's name: ``YYYY-MM-DD-HH-MM-<project>.md`` (groups: time, project)."""


def _xdg(var: str, fallback: str) -> Path:
    value = os.environ.get(var, "")
    # The spec says relative values are invalid and must be ignored.
    if value and os.path.isabs(value):
        return Path(value)
    return Path.home() / fallback


def state_dir() -> Path:
    """``$XDG_STATE_HOME/memoryd``: the index, reports and logs."""
    return _xdg("XDG_STATE_HOME", ".local/state") / "memoryd"


def config_file() -> Path:
    """``$XDG_CONFIG_HOME/memoryd/config.yaml``."""
    return _xdg("XDG_CONFIG_HOME", ".config") / "memoryd" / "config.yaml"


def data_memory_dir() -> Path:
    """``$XDG_DATA_HOME/memoryd/memory``: the default root when nothing else exists."""
    return _xdg("XDG_DATA_HOME", ".local/share") / "memoryd" / "memory"


def default_db() -> Path:
    """The index path: ``MEMORYD_DB`` or ``<state dir>/index.db``."""
    env = os.environ.get("MEMORYD_DB")
    return Path(env) if env else state_dir() / "index.db"


def runtime_dir() -> Path:
    """``$XDG_RUNTIME_DIR/memoryd``, or ``/tmp/memoryd-$UID`` without a runtime dir."""
    base = os.environ.get("XDG_RUNTIME_DIR", "")
    if base and os.path.isabs(base):
        return Path(base) / "memoryd"
    return Path(f"/tmp/memoryd-{os.getuid()}")  # noqa: S108 - per-user, checked 0700


def default_socket() -> Path:
    """The socket path: ``MEMORYD_SOCKET`` or ``<runtime dir>/memoryd.sock``."""
    env = os.environ.get("MEMORYD_SOCKET")
    return Path(env) if env else runtime_dir() / "memoryd.sock"


def claude_config_dir() -> Path:
    """``$CLAUDE_CONFIG_DIR`` or ``~/.claude``."""
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env) if env else Path.home() / ".claude"
