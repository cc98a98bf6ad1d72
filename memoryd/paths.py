"""Default locations (XDG base directories), socket discovery, and file-name rules.

Each function reads the environment at call time. Standard library only: the hook uses it.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import stat
from pathlib import Path
from typing import NamedTuple

SESSION_FILENAME = re.compile(r"^(\d{4}-\d{2}-\d{2}-\d{2}-\d{2})-(.+)\.md$")
"""A session memory's name: ``YYYY-MM-DD-HH-MM-<project>.md`` (groups: time, project)."""
SESSION_STAMP_FORMAT = "%Y-%m-%d-%H-%M"
"""A session's stamp (the start of its file name), in local time."""
FUTURE_SLACK = dt.timedelta(days=1)
"""How far after now a session's stamp may be and still count (clocks and time zones differ)."""


def session_stamp_problem(stamp: str, now: dt.datetime | None = None) -> str | None:
    """Why a session stamp cannot take part in "which session is newest" (no real time, or
    more than :data:`FUTURE_SLACK` after ``now``: it would stay newest for years), or None."""
    try:
        when = dt.datetime.strptime(stamp, SESSION_STAMP_FORMAT)
    except ValueError:
        return f"its time {stamp} is not a real date and time"
    current = dt.datetime.now() if now is None else now
    if current.tzinfo is not None:
        current = current.astimezone().replace(tzinfo=None)  # stamps are local time
    if when - current > FUTURE_SLACK:
        return (
            f"dated {when:%Y-%m-%d %H:%M}, more than a day after now: left out of the "
            "newest session (a planted file or a wrong clock)"
        )
    return None


def _xdg(var: str, fallback: str) -> Path:
    value = os.environ.get(var, "")
    # The spec says relative values are invalid and must be ignored.
    if value and os.path.isabs(value):
        return Path(value)
    return Path.home() / fallback


def state_dir() -> Path:
    """``$XDG_STATE_HOME/memoryd``: the index, reports and logs."""
    return _xdg("XDG_STATE_HOME", ".local/state") / "memoryd"


def make_private_dirs(directory: Path) -> None:
    """Create ``directory`` and its missing parents 0700, whatever the umask; folders that
    exist are left as they are."""
    missing = [p for p in (directory, *directory.parents) if not p.exists()]
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            continue
        os.chmod(folder, 0o700)


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


class SocketChoice(NamedTuple):
    """Where clients look for the daemon (and ``serve`` binds), and why there."""

    path: Path
    reason: str


RUN_USER = Path("/run/user")  # where systemd-logind makes each user's runtime directory


def socket_choice() -> SocketChoice:
    """The socket path and the rule that chose it, first match wins: ``$MEMORYD_SOCKET``;
    ``$XDG_RUNTIME_DIR/memoryd/memoryd.sock``; the same under ``/run/user/$UID`` when that is
    our directory (a client started without the variable still finds the systemd daemon);
    else ``/tmp/memoryd-$UID/memoryd.sock``."""
    env = os.environ.get("MEMORYD_SOCKET")
    if env:
        return SocketChoice(Path(env), "$MEMORYD_SOCKET")
    base = os.environ.get("XDG_RUNTIME_DIR", "")
    # The spec says relative values are invalid and must be ignored.
    if base and os.path.isabs(base):
        return SocketChoice(Path(base) / "memoryd" / "memoryd.sock", "$XDG_RUNTIME_DIR")
    uid = os.getuid()
    run = RUN_USER / str(uid)
    try:
        info = os.lstat(run)
    except OSError:
        info = None
    if info is not None and stat.S_ISDIR(info.st_mode) and info.st_uid == uid:
        why = f"$XDG_RUNTIME_DIR is unset; {run} exists and is ours"
        return SocketChoice(run / "memoryd" / "memoryd.sock", why)
    why = f"$XDG_RUNTIME_DIR is unset and there is no {RUN_USER / str(uid)} of ours"
    return SocketChoice(Path(f"/tmp/memoryd-{uid}") / "memoryd.sock", why)  # noqa: S108 - 0700


def default_socket() -> Path:
    """The socket path: ``MEMORYD_SOCKET``, else the runtime dir's ``memoryd.sock``."""
    return socket_choice().path


def other_sockets(chosen: Path) -> list[Path]:
    """Sockets of the other rules that exist: a daemon a client may have meant instead."""
    uid = os.getuid()
    candidates = [
        RUN_USER / str(uid) / "memoryd" / "memoryd.sock",
        Path(f"/tmp/memoryd-{uid}/memoryd.sock"),  # noqa: S108 - only looked at
    ]
    base = os.environ.get("XDG_RUNTIME_DIR", "")
    if base and os.path.isabs(base):
        candidates.insert(0, Path(base) / "memoryd" / "memoryd.sock")
    out: list[Path] = []
    for path in candidates:
        try:
            is_socket = stat.S_ISSOCK(os.lstat(path).st_mode)
        except OSError:
            continue
        if is_socket and path != chosen and path not in out:
            out.append(path)
    return out


_LINE_BREAKS = frozenset("\u2028\u2029\x85")


def name_problem(path: str) -> str | None:
    """Why ``path`` cannot be indexed or answered under its own name, or None: bytes that are
    not UTF-8 (lone surrogates SQLite and JSON cannot carry), or a control character (it
    breaks line-based output and can smuggle text into an agent's prompt)."""
    if path.isascii():
        return None if path.isprintable() else "holds a control character"
    for ch in path:
        code = ord(ch)
        if 0xD800 <= code <= 0xDFFF:
            return "is not valid UTF-8"
        if code < 0x20 or 0x7F <= code <= 0x9F or ch in _LINE_BREAKS:
            return "holds a control character"
    return None


def escaped(path: str) -> str:
    """``path`` readable and storable: bytes that are not UTF-8 as ``\\xff``, other lone
    surrogates as ``\\udxxx``, controls as ``\\n``; a name with nothing wrong is returned
    as it is (memoryd keys the escaped form: a real name spelt so shares its row)."""
    if name_problem(path) is None:
        return path
    out = []
    for ch in path:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
            out.append(f"\\x{code - 0xDC00:02x}")
        elif 0xD800 <= code <= 0xDFFF:
            out.append(f"\\u{code:04x}")
        elif code < 0x20 or 0x7F <= code <= 0x9F or ch in _LINE_BREAKS:
            out.append(repr(ch)[1:-1])
        else:
            out.append(ch)
    return "".join(out)
