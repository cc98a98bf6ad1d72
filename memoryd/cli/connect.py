"""The CLI's way to the daemon: connect, and start one in the background when none answers.

As watchman's CLI does: when nothing answers on the socket a command
resolves (``--socket``, ``$MEMORYD_SOCKET``, the runtime dir), it starts
``memoryd serve`` on that socket, detached, with this environment (so
``MEMORYD_*`` and ``XDG_*`` apply), its output appended to ``daemon.log`` in
its state directory, and waits until it answers. The daemon is the only
writer of the index; no command does a daemon's work itself. Commands
started together start one daemon: they take turns on a lock file beside its
log, and each looks again for an answer before it starts one.

Given ``--db``, a daemon started here serves that index and keeps its
pidfile and log beside it; a running daemon that serves another index is an
error (never an answer from the wrong file). ``--require-daemon`` fails
instead of starting one.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memoryd import paths
from memoryd.cli.common import note
from memoryd.cli.wait import told_while_starting
from memoryd.errors import DaemonUnavailable, InvalidParams, MemorydError, UnsafeDaemon
from memoryd.ipc.client import Client

START_WAIT_S = 30.0
"""How long a command waits for the daemon it started to answer on its socket."""


def ask(args: argparse.Namespace, method: str, params: Mapping[str, Any]) -> Any:
    """``method``'s answer from the daemon (started if none runs); None params are left out."""
    with connected(args) as c, told_while_starting(c):
        return c.call(method, params)


def connected(args: argparse.Namespace, timeout: float = 60.0) -> Client:
    """A client connected to the daemon ``args`` name, started first if none answers."""
    c = Client(args.socket, timeout=timeout)
    try:
        c.connect()
    except UnsafeDaemon:
        raise
    except DaemonUnavailable:
        if getattr(args, "require_daemon", False):
            raise
        start(c.socket_path, getattr(args, "db", None))
        c.connect()
    db = getattr(args, "db", None)
    if db is not None:
        serving = c.status()["db"]
        if os.path.realpath(serving) != os.path.realpath(db):
            c.close()
            raise InvalidParams(
                f"the daemon on {c.socket_path} serves {serving}, not --db {db}: stop it "
                "(`memoryd stop`) or give --socket for a daemon of that index"
            )
    return c


def start(socket: Path, db: Path | None) -> None:
    """Start ``memoryd serve`` on ``socket`` (serving ``db`` if given); return once it answers.

    Under a lock, so of the commands that found no daemon at once only the
    first starts one; the others find it answering when their turn comes.
    """
    state = Path(db).absolute().parent if db is not None else paths.state_dir()
    for folder in reversed([p for p in (state, *state.parents) if not p.exists()]):
        folder.mkdir(mode=0o700, exist_ok=True)  # each one private, whatever the umask
    with open(state / "start.lock", "ab") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _answers(socket):
            _spawn(socket, db, state)


def _spawn(socket: Path, db: Path | None, state: Path) -> None:
    argv = [sys.executable, "-m", "memoryd", "serve", "--socket", str(socket.absolute())]
    if db is not None:
        argv += ["--db", str(Path(db).absolute()), "--state-dir", str(state)]
    env = dict(os.environ)
    if env.get("MEMORYD_DB"):
        env["MEMORYD_DB"] = os.path.abspath(env["MEMORYD_DB"])
    log = state / "daemon.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            env=env,
            cwd="/",
            start_new_session=True,
        )
    note(f"no daemon answered on {socket}; started one (pid {proc.pid}, log {log})")
    deadline = time.monotonic() + START_WAIT_S
    while not _answers(socket):
        code = proc.poll()
        if code is not None and not _answers(socket):
            raise DaemonUnavailable(
                f"the daemon started on {socket} exited with code {code} before answering: "
                f"{_last_line(log)} (its log: {log})"
            )
        if time.monotonic() > deadline:
            raise DaemonUnavailable(
                f"the daemon started on {socket} (pid {proc.pid}) did not answer within "
                f"{START_WAIT_S:.0f} s (its log: {log})"
            )
        time.sleep(0.05)


def _answers(socket: Path) -> bool:
    """Whether a daemon answers ``status`` on ``socket`` (one that bound it may still fail)."""
    try:
        with Client(socket, timeout=2) as c:
            c.status()
    except UnsafeDaemon:
        raise
    except MemorydError:
        return False
    return True


def _last_line(log: Path) -> str:
    """The log's last line: where a failed ``serve`` says why."""
    with open(log, "rb") as fh:
        fh.seek(max(0, fh.seek(0, os.SEEK_END) - 4096))
        lines = fh.read().decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else "it wrote nothing"
