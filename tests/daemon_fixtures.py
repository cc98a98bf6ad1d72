"""A real memoryd daemon in a subprocess, on a socket in a temp dir.

Tests get a :class:`DaemonProc` with the paths it uses and a ``client()``
factory; teardown stops it (SIGTERM, then SIGKILL) and fails the test if the
daemon wrote a traceback to its log.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from memoryd.config import Config
from memoryd.daemon.compose import Parts, compose
from memoryd.daemon.lifecycle import Lifecycle, Where
from memoryd.indexer.store import IndexStore
from memoryd.ipc.client import Client

START_TIMEOUT = 20.0


def scaled(seconds: float) -> float:
    """``seconds`` stretched by the load average per core (never shortened).

    For deadlines that a healthy run meets long before they expire (start-up,
    stopping): on a machine shared with other test runs, slowness is not the
    failure these deadlines are there to catch.
    """
    return seconds * max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))


@dataclass
class DaemonProc:
    home: Path
    roots: list[Path]
    socket: Path
    state_dir: Path
    env: dict[str, str]
    extra_args: list[str] = field(default_factory=list)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def log_path(self) -> Path:
        return self.home / "daemon.log"

    @property
    def db(self) -> Path:
        return self.state_dir / "index.db"

    def argv(self) -> list[str]:
        args = [
            sys.executable,
            "-m",
            "memoryd",
            "serve",
            "--socket",
            str(self.socket),
            "--state-dir",
            str(self.state_dir),
        ]
        for root in self.roots:
            args += ["--root", str(root)]
        return args + self.extra_args

    def start(self, wait: bool = True, **popen: Any) -> DaemonProc:
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            popen.pop("argv", None) or self.argv(),
            env=self.env,
            stdout=log,
            stderr=log,
            stdin=subprocess.DEVNULL,
            **popen,
        )
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self) -> None:
        limit = scaled(START_TIMEOUT)
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"daemon exited {self.proc.returncode}:\n{self.log()}")
            try:
                with self.client(timeout=2) as c:
                    if c.status()["state"] == "ready":
                        return
            except Exception:
                pass
            time.sleep(0.02)  # a tight loop of status calls would slow the first index it waits on
        raise AssertionError(f"daemon not ready in {limit:.0f}s:\n{self.log()}")

    def client(self, timeout: float = 10.0) -> Client:
        return Client(self.socket, timeout=timeout)

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        with self.client() as c:
            return c.call(method, params)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(scaled(timeout))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"daemon ignored signal {sig}:\n{self.log()}") from None


@contextmanager
def module_daemon(home: Path) -> Iterator[DaemonProc]:
    """One real daemon over ``home/memory`` for a whole test module; stopped and checked after.

    For modules whose tests only query the daemon, each in folders of its own,
    so one start-up serves them all.
    """
    (home / "memory").mkdir(exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix="md-", dir="/tmp"))  # AF_UNIX path limit
    d = DaemonProc(
        home=home,
        roots=[home / "memory"],
        socket=run_dir / "memoryd.sock",
        state_dir=home / "state" / "memoryd",
        env=daemon_env(home),
    )
    d.start()
    try:
        yield d
    finally:
        if d.proc is not None and d.proc.poll() is None:
            d.stop()
        shutil.rmtree(run_dir, ignore_errors=True)
    assert "Traceback" not in d.log(), d.log()


def daemon_env(home: Path) -> dict[str, str]:
    """A private HOME/XDG world so nothing touches the real user's folders.

    ``CLAUDE*`` variables are dropped too: run from inside a Claude Code
    session, ``CLAUDE_PROJECT_DIR`` would point the hook at that project.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "XDG_", "CLAUDE"))}
    env.pop("ANTHROPIC_API_KEY", None)
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_STATE_HOME=str(home / "state"),
        XDG_DATA_HOME=str(home / "data"),
        XDG_RUNTIME_DIR=str(home / "run"),
        CLAUDE_CONFIG_DIR=str(home / "claude"),
        MEMORYD_LOG_LEVEL="DEBUG",
    )
    return env


def raw_exchange(daemon: DaemonProc, lines: list[bytes]) -> list[dict[str, object]]:
    """Send raw request lines on one connection; the decoded answers, in order."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(30)
        sock.connect(str(daemon.socket))
        reader = sock.makefile("rb")
        answers = []
        for line in lines:
            sock.sendall(line + b"\n")
            answers.append(json.loads(reader.readline()))
        return answers


def wait_until(predicate: Callable[[], bool], timeout: float = 5.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout}s waiting for {what or predicate}")


def write_memory(path: Path, description: str, mtype: str = "feedback", body: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"---\nname: {path.stem}\ndescription: {json.dumps(description)}\ntype: {mtype}\n"
        f"---\n{body}\n",
        encoding="utf-8",
    )
    return path


@pytest.fixture
def make_daemon(tmp_path: Path) -> Iterator[Callable[..., DaemonProc]]:
    """Factory: ``make_daemon(roots=[...], start=True)``; all are stopped at teardown."""
    made: list[DaemonProc] = []
    # Short socket paths: AF_UNIX paths are limited to 107 bytes.
    run_dir = Path(tempfile.mkdtemp(prefix="md-", dir="/tmp"))

    def make(roots: list[Path] | None = None, start: bool = True, **kw: Any) -> DaemonProc:
        home = tmp_path / f"home{len(made)}"
        home.mkdir()
        if roots is None:
            roots = [home / "memory"]
            roots[0].mkdir()
        sock_dir = run_dir / str(len(made))
        d = DaemonProc(
            home=home,
            roots=roots,
            socket=sock_dir / "memoryd.sock",
            state_dir=home / "state" / "memoryd",
            env=daemon_env(home),
            **kw,
        )
        made.append(d)
        if start:
            d.start()
        return d

    yield make
    for d in made:
        if d.proc is not None and d.proc.poll() is None:
            d.stop()
        assert "Traceback" not in d.log(), d.log()
    shutil.rmtree(run_dir, ignore_errors=True)


@pytest.fixture
def daemon(make_daemon: Callable[..., DaemonProc]) -> DaemonProc:
    return make_daemon()


@contextmanager
def composed(cfg: Config, clock: Callable[[], float] = time.time) -> Iterator[Parts]:
    """A daemon's parts in this process, the server never started: their methods, called here."""
    where = Where(str(cfg.socket), activated=False, db=str(cfg.db_path), release=lambda: None)
    store = IndexStore(cfg.db_path)
    listener = socket.socket(socket.AF_UNIX)
    parts = compose(cfg, store, listener, Lifecycle(), where, clock=clock)
    try:
        yield parts
    finally:
        parts.stop()
