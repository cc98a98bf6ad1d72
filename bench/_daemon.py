"""A real memoryd daemon in a subprocess, for benchmarks.

``running_daemon(roots)`` starts ``python -m memoryd serve`` with a private
HOME/XDG world in a temp dir and a short socket path under /tmp, waits until
``status`` says ``ready`` and yields a :class:`BenchDaemon`. On exit, normal or
not, the daemon gets SIGTERM (then SIGKILL) and the temp dirs are removed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from memoryd.ipc.client import Client


@dataclass
class BenchDaemon:
    proc: subprocess.Popen[bytes]
    socket: Path
    home: Path
    roots: list[Path]
    ready_s: float

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def log_path(self) -> Path:
        return self.home / "daemon.log"

    def client(self, timeout: float = 30.0) -> Client:
        return Client(self.socket, timeout=timeout)

    def memory_mb(self) -> dict[str, float]:
        """VmRSS and VmHWM (peak RSS) of the daemon from /proc, in MiB."""
        out: dict[str, float] = {}
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) / 1024  # kB -> MiB
        return out

    def log_tail(self, lines: int = 40) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


def daemon_env(home: Path, log_level: str) -> dict[str, str]:
    """A private HOME/XDG world so nothing touches the real user's folders (no CLAUDE* either)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "XDG_", "CLAUDE"))}
    env.pop("ANTHROPIC_API_KEY", None)
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_STATE_HOME=str(home / "state"),
        XDG_DATA_HOME=str(home / "data"),
        XDG_RUNTIME_DIR=str(home / "run"),
        CLAUDE_CONFIG_DIR=str(home / "claude"),
        MEMORYD_LOG_LEVEL=log_level,
    )
    if os.environ.get("MEMORYD_PROFILE"):  # daemon/profiling.py: profile the bench's daemon
        env["MEMORYD_PROFILE"] = os.environ["MEMORYD_PROFILE"]
    return env


POLL_S = 0.02
"""The pause between two ``status`` calls while waiting for ready: a client polling
without one takes CPU from the first index it waits for (two cores: about a third)."""


def _wait_ready(proc: subprocess.Popen[bytes], sock: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"daemon exited with {proc.returncode} before it was ready")
        try:
            with Client(sock, timeout=2) as c:
                if c.status()["state"] == "ready":
                    return
        except Exception:
            time.sleep(0.05)
        else:
            time.sleep(POLL_S)
    raise RuntimeError(f"daemon not ready within {timeout:.0f} s")


def _stop(proc: subprocess.Popen[bytes], timeout: float = 15.0) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def running_daemon(
    roots: list[Path], *, ready_timeout: float = 300.0, log_level: str = "WARNING"
) -> Iterator[BenchDaemon]:
    """Start a daemon watching ``roots``; always stopped and cleaned up on exit."""
    home = Path(tempfile.mkdtemp(prefix="memoryd-bench-home-"))
    # AF_UNIX paths are limited to 107 bytes: keep the socket path short.
    run_dir = Path(tempfile.mkdtemp(prefix="mdb-", dir="/tmp"))
    sock = run_dir / "s" / "memoryd.sock"
    argv = [sys.executable, "-m", "memoryd", "serve", "--socket", str(sock)]
    argv += ["--state-dir", str(home / "state" / "memoryd")]
    for root in roots:
        argv += ["--root", str(root)]
    proc: subprocess.Popen[bytes] | None = None
    try:
        with (home / "daemon.log").open("ab") as log:
            started = time.perf_counter()
            proc = subprocess.Popen(
                argv,
                env=daemon_env(home, log_level),
                stdout=log,
                stderr=log,
                stdin=subprocess.DEVNULL,
            )
        daemon = BenchDaemon(proc, sock, home, roots, 0.0)
        try:
            _wait_ready(proc, sock, ready_timeout)
        except RuntimeError as exc:
            raise RuntimeError(f"{exc}\n{daemon.log_tail()}") from None
        daemon.ready_s = time.perf_counter() - started
        yield daemon
    finally:
        if proc is not None:
            _stop(proc)
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(run_dir, ignore_errors=True)
