"""The CLI's way to the daemon: connect, and start one in the background when none answers.

With no daemon on the socket a command resolves, it starts ``memoryd serve`` there,
detached, with this environment, its output appended to ``daemon.log`` in its state
directory, and waits until it answers; commands started together take turns on a lock
beside that log, so one daemon starts. With ``--db`` it serves that index from a private
state folder (:func:`state_for`), and a running daemon serving another is an error.
``--require-daemon`` fails instead. A request held by a daemon still building its first
index says so on stderr after :data:`NOTE_AFTER_S`.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memoryd import logs, paths
from memoryd.cli.common import note, show
from memoryd.cli.flags import wire_params
from memoryd.errors import DaemonUnavailable, InvalidParams, MemorydError, UnsafeDaemon
from memoryd.ipc.client import Client

if TYPE_CHECKING:
    from memoryd.replies import StatusReply

START_WAIT_S = 30.0
"""How long a command waits for the daemon it started to answer on its socket."""
NOTE_AFTER_S = 1.0
"""How long a request waits before the daemon is asked whether it is still starting."""


def ask(
    args: argparse.Namespace, method: str, params: Mapping[str, Any], timeout: float = 60.0
) -> Any:
    """``method``'s answer from the daemon (started if none runs); None params are left out."""
    with connected(args, timeout) as c:
        return c.call(method, params)


def answered(
    method: str, render: Callable[[Any], str], timeout: float = 60.0
) -> Callable[[argparse.Namespace], int]:
    """The handler of a command that sends ``method`` its flags and shows the answer."""

    def handler(args: argparse.Namespace) -> int:
        show(args, ask(args, method, wire_params(args, method), timeout), render)
        return 0

    return handler


@contextmanager
def connected(args: argparse.Namespace, timeout: float = 60.0) -> Iterator[Client]:
    """A client connected to the daemon ``args`` name, started first if none answers."""
    c = Client(args.socket, timeout=timeout)
    db = getattr(args, "db", None)
    try:
        c.connect()
    except UnsafeDaemon:
        raise
    except DaemonUnavailable:
        if getattr(args, "require_daemon", False):
            raise
        start(c.socket_path, db)
        c.connect()
    with c:
        if db is not None and os.path.realpath(serving := c.status()["db"]) != os.path.realpath(db):
            raise InvalidParams(
                f"the daemon on {c.socket_path} serves {serving}, not --db {db}: stop it "
                "(`memoryd stop`) or give --socket for a daemon of that index"
            )
        timer = threading.Timer(NOTE_AFTER_S, _say_if_starting, (c.socket_path,))
        timer.daemon = True
        timer.start()
        try:
            yield c
        finally:
            timer.cancel()
            timer.join()  # a probe under way finishes its line before the command goes on


def probe(socket: Path | None, *, quiet: bool = True) -> StatusReply | None:
    """The ``status`` of the daemon on ``socket``, or None when none answers; a process of
    another user on it raises UnsafeDaemon unless ``quiet``."""
    try:
        with Client(socket, timeout=2) as c:
            return c.status()
    except UnsafeDaemon:
        if quiet:
            return None
        raise
    except MemorydError:
        return None


def _say_if_starting(socket: Path) -> None:
    """One line on stderr when the daemon on ``socket`` has not finished its first index."""
    status = probe(socket)
    if status is not None and status.get("state") == "starting":
        progress = status.get("indexing")
        done = (
            f" ({progress['done']:,} of {progress['total']:,} files so far)"
            if progress and progress.get("phase") == "indexing"
            else ""
        )
        note(f"waiting for the daemon to finish its first index{done}; this answers after it")


def start(socket: Path, db: Path | None) -> None:
    """Start ``memoryd serve`` on ``socket`` (serving ``db`` if given); return once it answers.

    Under a lock: of the commands that found no daemon at once only the first starts one.
    """
    state = state_for(db)
    paths.make_private_dirs(state)
    with open(state / "start.lock", "ab") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if probe(socket, quiet=False) is None:
            _spawn(socket, db, state)


def state_for(db: Path | None) -> Path:
    """The state directory of a daemon started for ``db`` (the default one for None)."""
    if db is None:
        return paths.state_dir()
    where = Path(db).absolute()
    return paths.state_dir() / "db" / f"{zlib.crc32(os.fsencode(where)):08x}"


def _spawn(socket: Path, db: Path | None, state: Path) -> None:
    log = state / "daemon.log"
    argv = [sys.executable, "-m", "memoryd", "serve", "--socket", str(socket.absolute())]
    argv += ["--log-file", str(log.absolute())]
    if db is not None:
        argv += ["--db", str(Path(db).absolute()), "--state-dir", str(state)]
    env = dict(os.environ)
    if env.get("MEMORYD_DB"):
        env["MEMORYD_DB"] = os.path.abspath(env["MEMORYD_DB"])
    # Until the daemon opens its log itself, what it says (a refused config) lands there too.
    with open(logs.open_log(str(log)), "ab") as out:
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
    while probe(socket, quiet=False) is None:
        code = proc.poll()
        if code is not None and probe(socket, quiet=False) is None:
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


def _last_line(log: Path) -> str:
    """The log's last line: where a failed ``serve`` says why."""
    with open(log, "rb") as fh:
        fh.seek(max(0, fh.seek(0, os.SEEK_END) - 4096))
        lines = fh.read().decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else "it wrote nothing"
