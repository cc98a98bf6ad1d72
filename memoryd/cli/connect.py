"""The CLI's way to the daemon: connect, and start one in the background when none answers.

When nothing answers on the socket a command resolves (``--socket``,
``$MEMORYD_SOCKET``, the runtime dir), it starts ``memoryd serve`` on that socket,
detached, with this environment, its output appended to ``daemon.log`` in its
state directory, and waits until it answers. Commands started together start one
daemon: they take turns on a lock file beside its log. Given ``--db``, a daemon
started here serves that index and keeps its pidfile, lock and log in a private
folder of its own below the state directory (:func:`state_for`), never in the
index's folder, which may be shared; a running daemon that serves another is an
error. ``--require-daemon`` fails instead of starting one. A request held by a
daemon still building its first index says so on stderr after
:data:`NOTE_AFTER_S`.
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
from typing import Any

from memoryd import paths
from memoryd.cli.common import note, show
from memoryd.cli.flags import wire_params
from memoryd.errors import DaemonUnavailable, InvalidParams, MemorydError, UnsafeDaemon
from memoryd.ipc.client import Client

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


def answered(method: str, render: Callable[[Any], str]) -> Callable[[argparse.Namespace], int]:
    """The handler of a command that sends ``method`` its flags and shows the answer."""

    def handler(args: argparse.Namespace) -> int:
        show(args, ask(args, method, wire_params(args, method)), render)
        return 0

    return handler


@contextmanager
def connected(args: argparse.Namespace, timeout: float = 60.0) -> Iterator[Client]:
    """A client connected to the daemon ``args`` name, started first if none answers; a
    request held by a daemon still building its first index prints a line on stderr."""
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
    with c:
        db = getattr(args, "db", None)
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


def _say_if_starting(socket: Path) -> None:
    """One line on stderr when the daemon on ``socket`` has not finished its first index."""
    try:
        with Client(socket, timeout=2) as probe:
            status = probe.status()
    except MemorydError:
        return
    progress = status.get("indexing")
    if status.get("state") == "starting":
        done = (
            f" ({progress['done']:,} of {progress['total']:,} files so far)"
            if progress and progress.get("phase") == "indexing"
            else ""
        )
        note(f"waiting for the daemon to finish its first index{done}; this answers after it")


def start(socket: Path, db: Path | None) -> None:
    """Start ``memoryd serve`` on ``socket`` (serving ``db`` if given); return once it answers.

    Under a lock, so of the commands that found no daemon at once only the
    first starts one; the others find it answering when their turn comes.
    """
    state = state_for(db)
    paths.make_private_dirs(state)
    with open(state / "start.lock", "ab") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _answers(socket):
            _spawn(socket, db, state)


def state_for(db: Path | None) -> Path:
    """The state directory of a daemon started for ``db`` (the default one for None)."""
    if db is None:
        return paths.state_dir()
    where = Path(db).absolute()
    return paths.state_dir() / "db" / f"{zlib.crc32(os.fsencode(where)):08x}"


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
