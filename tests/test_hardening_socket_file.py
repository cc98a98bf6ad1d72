"""The socket file deleted under a running daemon: it binds it again, or is taken over.

Before: the daemon went on listening on a socket nobody could reach, SIGHUP
did not help, and a new ``serve`` was refused as "already running" because
the first still held the pidfile. Now the daemon binds its socket again
within a second (at once on SIGHUP), and a new ``serve`` asks a daemon that
answers nowhere to bind again, then to stop, and takes its place.
"""

from __future__ import annotations

import dataclasses
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from daemon_fixtures import DaemonProc, scaled, wait_until

from memoryd.daemon import runtime


def _answers(d: DaemonProc) -> bool:
    try:
        return bool(d.call("status")["state"] == "ready")
    except Exception:
        return False


def test_a_deleted_socket_file_is_bound_again(make_daemon: Callable[..., DaemonProc]) -> None:
    d = make_daemon()
    first = d.socket.stat().st_ino
    d.socket.unlink()
    wait_until(lambda: _answers(d), scaled(10), "the daemon to answer on a new socket file")
    assert d.socket.stat().st_ino != first and "daemon.socket_rebound" in d.log()
    assert oct(d.socket.stat().st_mode & 0o777) == "0o600"
    d.socket.unlink()  # again, and SIGHUP: bound again as well
    assert d.proc is not None
    d.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: _answers(d), scaled(10), "the daemon to answer after SIGHUP")


def test_a_second_serve_beside_a_daemon_that_rebinds_is_refused_naming_it(
    make_daemon: Callable[..., DaemonProc],
) -> None:
    d = make_daemon()
    d.socket.unlink()
    second = subprocess.run(d.argv(), env=d.env, capture_output=True, timeout=scaled(60))
    assert second.returncode != 0
    assert b"already running" in second.stderr, second.stderr
    assert _answers(d)


def _pending(pid: int, sig: int) -> bool:
    """Whether ``sig`` waits for the (stopped) process ``pid``."""
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    masks = [int(line.split()[1], 16) for line in status if line.startswith(("SigPnd", "ShdPnd"))]
    return any(mask & (1 << (sig - 1)) for mask in masks)


def test_a_second_serve_takes_over_from_a_daemon_nobody_can_reach(
    make_daemon: Callable[..., DaemonProc],
) -> None:
    old = make_daemon()
    assert old.proc is not None
    pid = old.proc.pid
    assert runtime.is_memoryd_daemon(pid)
    old.proc.send_signal(signal.SIGSTOP)  # hung: it cannot bind its socket again
    old.socket.unlink()
    new = dataclasses.replace(old, proc=None)
    new.start(wait=False)
    try:
        # The new serve asks it to rebind (SIGHUP), waits, then asks it to stop.
        wait_until(lambda: _pending(pid, signal.SIGTERM), scaled(30), "SIGTERM sent to the old")
        old.proc.send_signal(signal.SIGCONT)
        assert old.proc.wait(scaled(30)) == 0
        new.wait_ready()
        assert new.call("status")["pid"] == new.proc.pid  # type: ignore[union-attr]
        assert "daemon.took_over" in new.log()
    finally:
        old.proc.send_signal(signal.SIGCONT)
        new.stop()


def test_a_second_serve_on_another_socket_leaves_a_reachable_daemon_alone(
    make_daemon: Callable[..., DaemonProc],
) -> None:
    """Same state dir (so the same pidfile), another ``--socket``: the first answers on its own."""
    d = make_daemon()
    other = dataclasses.replace(d, socket=d.socket.with_name("other.sock"))
    second = subprocess.run(other.argv(), env=d.env, capture_output=True, timeout=scaled(60))
    assert second.returncode != 0 and b"already running" in second.stderr, second.stderr
    assert _answers(d) and "daemon.taking_over" not in d.log()


LAUNCHER = (  # plays systemd: the listener becomes fd 3, LISTEN_PID the pid that execs memoryd
    "import os, sys; os.dup2(int(sys.argv[1]), 3); "
    "os.environ.update(LISTEN_FDS='1', LISTEN_PID=str(os.getpid())); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[2:]])"
)


def test_an_activated_socket_deleted_is_logged_not_bound_by_path(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    """systemd's socket is not ours to bind: the loss is logged once, nothing is bound."""
    d = make_daemon(start=False)
    activated = tmp_path / "run" / "activated.sock"
    activated.parent.mkdir(mode=0o700, parents=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(activated))
    listener.listen(16)
    argv = [sys.executable, "-c", LAUNCHER, str(listener.fileno()), *d.argv()[1:]]
    configured, d.socket = d.socket, activated
    d.start(argv=argv, pass_fds=(listener.fileno(),))
    listener.close()
    activated.unlink()
    wait_until(lambda: "daemon.socket_lost" in d.log(), scaled(10), "the loss to be logged")
    assert not activated.exists() and not configured.exists()
    assert d.log().count("daemon.socket_lost") == 1
