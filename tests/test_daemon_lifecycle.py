"""Start-up, refusal, stale sockets, signals, crash recovery, systemd integration."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from daemon_fixtures import DaemonProc, scaled, wait_until, write_memory

from memoryd.cli import main
from memoryd.integrations.systemd_units import install, render
from memoryd.ipc.client import Client


def test_second_daemon_is_refused_naming_the_pid(
    make_daemon: Callable[..., DaemonProc],
) -> None:
    first = make_daemon()
    assert first.proc is not None
    second = make_daemon(roots=first.roots, start=False)
    second.state_dir = first.state_dir
    out = subprocess.run(second.argv(), env=second.env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 1
    assert f"already running (pid {first.proc.pid}" in out.stderr
    assert "Traceback" not in out.stderr
    assert first.call("status")["state"] == "ready"


def test_live_socket_is_never_removed_even_with_another_state_dir(
    make_daemon: Callable[..., DaemonProc],
) -> None:
    first = make_daemon()
    second = make_daemon(roots=first.roots, start=False)
    second.socket = first.socket  # same socket, different state dir and pidfile
    out = subprocess.run(second.argv(), env=second.env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 1
    assert "already answers on" in out.stderr
    assert first.socket.exists()
    assert first.call("status")["state"] == "ready"


def test_stale_socket_from_a_dead_daemon_is_replaced(
    make_daemon: Callable[..., DaemonProc],
) -> None:
    d = make_daemon(start=False)
    d.socket.parent.mkdir(mode=0o700, parents=True)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(d.socket))  # bound, never listening, then closed: a leftover file
    dead.close()
    assert d.socket.exists()
    d.start()
    assert d.call("status")["pid"] == d.proc.pid  # type: ignore[union-attr]


def test_runtime_dir_open_to_others_is_refused(make_daemon: Callable[..., DaemonProc]) -> None:
    d = make_daemon(start=False)
    d.socket.parent.mkdir(parents=True)
    d.socket.parent.chmod(0o777)
    out = subprocess.run(d.argv(), env=d.env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 1
    assert "writable by others" in out.stderr and "chmod 700" in out.stderr


def test_sigterm_removes_socket_and_pidfile_and_exits_zero(daemon: DaemonProc) -> None:
    pidfile = daemon.state_dir / "memoryd.pid"
    assert pidfile.read_text().strip() == str(daemon.proc.pid)  # type: ignore[union-attr]
    assert daemon.stop(signal.SIGTERM) == 0
    assert not daemon.socket.exists()
    assert not pidfile.exists()
    assert "daemon.stopped" in daemon.log()


def test_shutdown_method_unlinks_socket_before_replying(daemon: DaemonProc) -> None:
    with daemon.client() as c:
        reply = c.call("shutdown")
        # By the time the answer arrives, new clients can no longer find us.
        assert not daemon.socket.exists()
    assert reply["stopping"] is True
    assert daemon.proc is not None and daemon.proc.wait(15) == 0


def test_socket_is_private(daemon: DaemonProc) -> None:
    assert daemon.socket.stat().st_mode & 0o777 == 0o600
    assert daemon.socket.parent.stat().st_mode & 0o777 == 0o700


def test_kill_9_during_heavy_writes_then_restart_matches_disk(
    make_daemon: Callable[..., DaemonProc],
) -> None:
    d = make_daemon()
    root = d.roots[0]

    def indexed() -> int:
        with contextlib.closing(sqlite3.connect(f"file:{d.db}?mode=ro", uri=True)) as conn:
            return int(conn.execute("SELECT count(*) FROM files").fetchone()[0])

    written = 0

    def write(count: int) -> None:
        nonlocal written
        for i in range(written, written + count):
            write_memory(root / f"d{i % 10}" / f"feedback_{i}.md", f"memory number {i}")
        written += count

    write(500)
    wait_until(lambda: indexed() > 0, timeout=scaled(30))  # the daemon is writing the burst
    write(500)  # and more arrives than it has taken
    assert d.proc is not None
    d.proc.kill()
    d.proc.wait()
    # Writes were in flight at the kill: some of the burst committed, the rest not yet.
    assert 0 < indexed() < written
    for i in range(1500, 1600):  # changes while no daemon runs
        write_memory(root / "late" / f"feedback_{i}.md", f"late memory {i}")
    d.start()
    on_disk = {str(p) for p in root.rglob("*.md")}
    listing = d.call("list", {"dir": str(root)})
    assert {f["path"] for f in listing["files"]} == on_disk
    with sqlite3.connect(d.db) as conn:
        conn.execute("INSERT INTO files_fts(files_fts) VALUES ('integrity-check')")
        hits = conn.execute(
            "SELECT count(*) FROM files_fts WHERE files_fts MATCH 'late'"
        ).fetchone()[0]
    assert hits == 100


def test_sd_notify_ready_and_watchdog_on_a_real_datagram_socket(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    notify_path = tmp_path / "notify.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(str(notify_path))
    listener.settimeout(15)
    d = make_daemon(start=False)
    d.env.update(NOTIFY_SOCKET=str(notify_path), WATCHDOG_USEC="400000")
    d.start(wait=False)
    messages: list[str] = []
    while not any("WATCHDOG=1" in m for m in messages):
        messages.append(listener.recv(4096).decode())
    ready = next(m for m in messages if "READY=1" in m)
    assert "STATUS=watching 1 root(s)" in ready
    d.stop()
    listener.settimeout(5)
    while "STOPPING=1" not in messages[-1]:
        messages.append(listener.recv(4096).decode())
    listener.close()


def test_socket_activation_uses_the_passed_listener(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    d = make_daemon(start=False)
    # systemd binds where the socket unit says (%t/memoryd/memoryd.sock), which
    # need not be where memoryd would have bound: status must name the real one.
    activated = tmp_path / "run" / "activated.sock"
    activated.parent.mkdir(mode=0o700, parents=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(activated))
    listener.listen(16)
    # A tiny launcher plays systemd: the listener becomes fd 3 and LISTEN_PID
    # is the pid that then execs memoryd.
    launcher = (
        "import os, sys; os.dup2(int(sys.argv[1]), 3); "
        "os.environ.update(LISTEN_FDS='1', LISTEN_PID=str(os.getpid())); "
        "os.execv(sys.executable, [sys.executable, *sys.argv[2:]])"
    )
    argv = [sys.executable, "-c", launcher, str(listener.fileno()), *d.argv()[1:]]
    configured, d.socket = d.socket, activated  # serve is told --socket CONFIGURED
    d.start(argv=argv, pass_fds=(listener.fileno(),))
    listener.close()
    with Client(activated) as c:
        status = c.status()
        assert status["state"] == "ready"
        assert status["socket"] == str(activated) and status["activated"] is True
        c.call("shutdown")
    assert d.proc is not None and d.proc.wait(30) == 0
    assert not configured.exists()
    assert activated.exists(), "an activated socket belongs to systemd and is left in place"


def test_install_service_writes_units_pointing_at_this_python(tmp_path: Path) -> None:
    written = install(tmp_path / "units", ["--root", "/srv/mem"])
    service = (tmp_path / "units" / "memoryd.service").read_text()
    assert [u.path.name for u in written] == ["memoryd.service", "memoryd.socket"]
    assert [u.outcome for u in written] == ["new", "new"]
    assert f"ExecStart={sys.executable} -m memoryd serve --root /srv/mem" in service
    assert "Type=notify" in service and "WatchdogSec=" in service
    assert "Restart=on-failure" in service
    socket_unit = (tmp_path / "units" / "memoryd.socket").read_text()
    assert "SocketMode=0600" in socket_unit
    shipped = Path(__file__).resolve().parents[1] / "systemd" / "memoryd.service"
    assert render("memoryd.service", []).splitlines()[:5] == shipped.read_text().splitlines()[:5]


def test_install_service_keeps_a_backup_of_an_edited_unit_and_shows_the_change(
    tmp_path: Path,
) -> None:
    units = tmp_path / "units"

    def install_cli() -> str:
        argv = [sys.executable, "-m", "memoryd", "install-service", "--unit-dir", str(units)]
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return out.stdout

    install_cli()
    service = units / "memoryd.service"
    edited = service.read_text().replace("Restart=on-failure", "Restart=always")
    service.write_text(edited)
    out = install_cli()
    backups = list(units.glob("memoryd.service.bak-*"))
    assert len(backups) == 1 and backups[0].read_text() == edited
    assert f"your previous copy is saved as {backups[0]}" in out
    assert "    -Restart=always\n    +Restart=on-failure\n" in out
    assert f"{units / 'memoryd.socket'} is up to date" in out
    assert "Restart=on-failure" in service.read_text()
    assert "is up to date" in install_cli() and len(list(units.glob("*.bak-*"))) == 1


def test_install_service_checks_the_serve_arguments_before_writing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    units = tmp_path / "units"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes").mkdir()

    def install_with(*serve: str) -> tuple[int, str]:
        try:
            code = main(["install-service", "--unit-dir", str(units), "--", *serve])
        except SystemExit as exc:
            code = int(exc.code or 0)
        return code, capsys.readouterr().err

    code, err = install_with("--bogus-flag")
    assert code == 1 and "not `memoryd serve` arguments: --bogus-flag" in err
    code, err = install_with("--root", "missing")
    assert code == 1 and "memory directory not found: missing" in err
    code, err = install_with("--root")
    assert code == 2 and "argument --root: expected one argument" in err
    assert not units.exists(), "nothing is written for arguments serve would refuse"

    assert install_with("--root", "notes", "--db=state/i.db")[0] == 0
    service = (units / "memoryd.service").read_text()
    # The service runs from $HOME, so relative paths are made absolute here.
    assert f"serve --root {tmp_path / 'notes'} --db={tmp_path / 'state' / 'i.db'}\n" in service


def test_cli_status_and_stop(daemon: DaemonProc) -> None:
    cli = [sys.executable, "-m", "memoryd"]
    env = {**daemon.env, "MEMORYD_SOCKET": str(daemon.socket)}
    out = subprocess.run([*cli, "status", "--json"], env=env, capture_output=True, text=True)
    status = json.loads(out.stdout)
    assert status["protocol"] == 1 and "list" in status["capabilities"]
    assert status["roots"][0]["watcher"] in ("inotify", "polling")
    human = subprocess.run([*cli, "status"], env=env, capture_output=True, text=True).stdout
    assert f"(pid {status['pid']}) ready" in human
    version = subprocess.run([*cli, "--version"], env=env, capture_output=True, text=True)
    assert version.stdout.splitlines() == [
        f"memoryd {status['version']}",
        f"daemon: memoryd {status['version']} (pid {status['pid']}) on {daemon.socket}",
    ]
    out = subprocess.run([*cli, "stop"], env=env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and "stopped" in out.stdout
    out = subprocess.run([*cli, "status"], env=env, capture_output=True, text=True)
    assert out.returncode == 1
    assert out.stderr.startswith("memoryd: error: no memoryd daemon answers")


def test_list_starts_a_daemon_unless_one_is_required(tmp_path: Path) -> None:
    mem = tmp_path / "mem"
    write_memory(mem / "user_role.md", "the user is a data engineer", mtype="user")
    env = {
        **os.environ,
        "MEMORYD_SOCKET": str(tmp_path / "none.sock"),
        "MEMORYD_DB": str(tmp_path / "index.db"),
    }
    cli = [sys.executable, "-m", "memoryd", "list", str(mem)]
    out = subprocess.run([*cli, "--require-daemon"], env=env, capture_output=True, text=True)
    assert out.returncode == 1 and "no memoryd daemon answers" in out.stderr
    out = subprocess.run(cli, env=env, capture_output=True, text=True)
    assert out.returncode == 0
    assert f"no daemon answered on {tmp_path / 'none.sock'}; started one (pid " in out.stderr
    assert "- [user] user_role.md (" in out.stdout
    assert out.stdout.rstrip().endswith("): the user is a data engineer")
    out = subprocess.run([*cli, "--require-daemon"], env=env, capture_output=True, text=True)
    assert out.returncode == 0 and out.stderr == ""  # the daemon it started answers


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to connect as another uid")
def test_peer_with_another_uid_is_rejected(daemon: DaemonProc) -> None:
    # Open the path up so the kernel lets uid 65534 reach the socket at all;
    # then only the SO_PEERCRED check stands between it and the daemon.
    daemon.socket.parent.parent.chmod(0o711)
    daemon.socket.parent.chmod(0o711)
    daemon.socket.chmod(0o666)
    probe = (
        "import os, socket, sys; os.setgid(65534); os.setuid(65534); "
        "s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); "
        "print(s.makefile().readline())"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(daemon.socket)],
        capture_output=True,
        text=True,
        timeout=10,
    )
    assert out.returncode == 0, out.stderr
    reply = json.loads(out.stdout)
    assert reply["error"]["code"] == "invalid_request"
    assert "peer uid" in reply["error"]["message"]
    daemon.socket.parent.chmod(0o700)
    assert daemon.call("status")["state"] == "ready"


def test_new_root_from_a_request_is_watched(daemon: DaemonProc, tmp_path: Path) -> None:
    other = tmp_path / "other-project" / "memory"
    write_memory(other / "project_goal.md", "ship the beta by March", mtype="project")
    reply = daemon.call("watch", {"dir": str(other)})
    assert reply["added"] is True and reply["root"] == str(other)
    write_memory(other / "feedback_new.md", "written after watch")
    wait_until(
        lambda: len(daemon.call("list", {"dir": str(other)})["files"]) == 2,
        what="new root's file to show",
    )
    assert str(other) in [r["path"] for r in daemon.call("status")["roots"]]


def test_sigterm_during_the_first_reconcile_still_cleans_up(
    make_daemon: Callable[..., DaemonProc],
) -> None:
    d = make_daemon(start=False)
    for i in range(4000):
        write_memory(d.roots[0] / f"d{i % 20}" / f"feedback_{i}.md", f"memory {i}")
    pidfile = d.state_dir / "memoryd.pid"
    d.start(wait=False)
    wait_until(
        lambda: pidfile.exists() and pidfile.read_text().strip() != "",
        timeout=20,
        what="the pidfile",
    )
    assert d.stop(signal.SIGTERM) == 0
    assert not pidfile.exists() and not d.socket.exists()
    assert "Traceback" not in d.log()


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
def test_installed_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    install(tmp_path / "units", [])
    runtime = tmp_path / "rt"
    runtime.mkdir(mode=0o700)
    out = subprocess.run(
        ["systemd-analyze", "verify", "--user", "./memoryd.service", "./memoryd.socket"],
        cwd=tmp_path / "units",
        env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stderr.strip() == "", out.stderr
