"""Default locations, following the XDG base directory specification, and file names.

Each function reads the environment at call time so tests (and systemd units)
can point memoryd elsewhere with ``XDG_*`` or ``MEMORYD_*`` variables. The
module is light (no third-party imports) because the client path uses it.
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
    """Why a session stamp cannot take part in "which session is newest", or None when it can.

    A stamp more than :data:`FUTURE_SLACK` after ``now`` (a planted file, a
    clock gone wrong) would be the newest session for years, and one that is
    no real time sorts nowhere meaningful: both are left out of ``load_last``,
    the resume hook and ``context``, and ``check`` reports them.
    """
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


RUN_USER = Path("/run/user")
"""Where systemd-logind makes each user's runtime directory."""


def _user_runtime_dir(uid: int) -> Path | None:
    """``/run/user/$UID`` when it exists, is a real directory and belongs to us."""
    path = RUN_USER / str(uid)
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != uid:
        return None
    return path


def socket_choice() -> SocketChoice:
    """The socket path and the rule that chose it, first match wins.

    ``$MEMORYD_SOCKET``; ``$XDG_RUNTIME_DIR/memoryd/memoryd.sock``;
    ``/run/user/$UID/memoryd/memoryd.sock`` when that directory exists and is
    ours (where systemd puts the runtime dir: an MCP client that passes only
    HOME, PATH and a few others still finds the systemd daemon); else
    ``/tmp/memoryd-$UID/memoryd.sock``.
    """
    env = os.environ.get("MEMORYD_SOCKET")
    if env:
        return SocketChoice(Path(env), "$MEMORYD_SOCKET")
    base = os.environ.get("XDG_RUNTIME_DIR", "")
    # The spec says relative values are invalid and must be ignored.
    if base and os.path.isabs(base):
        return SocketChoice(Path(base) / "memoryd" / "memoryd.sock", "$XDG_RUNTIME_DIR")
    uid = os.getuid()
    run = _user_runtime_dir(uid)
    if run is not None:
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
    """Why ``path`` cannot be indexed or answered under its own name, or None.

    A name decoded from bytes that are not UTF-8 holds lone surrogates (Python's
    ``surrogateescape``): SQLite and JSON cannot carry it. A name with a control
    character (a newline, an escape sequence) would break every line-based
    output it is printed in and can smuggle text into an agent's prompt.
    """
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
    """``path`` readable and storable: bytes that are not UTF-8 as ``\\xff``, controls as ``\\n``.

    Every other character is kept, so a name with nothing wrong is returned as
    it is. (A real name spelt with these escapes would look the same; memoryd
    keys the escaped form, so the two share one row.) Any lone surrogate is
    escaped, not only the ``surrogateescape`` ones, so text from a request is
    safe to pass too.
    """
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
