"""bench/reliability.py's scenarios at the machine's limits (issue 21), each judged held/failed.

* ``full-disk``: the index's directory on a small tmpfs that the index outgrows
  while files keep arriving and saves keep coming; then the tmpfs is grown
  (``mount -o remount,size=``) and the time to converge is measured.
* ``lock``: another process holds the index's write lock for ``--lock-seconds``
  while saves, edits and selects go on; then releases it.
* ``threads``: the daemon in a pids cgroup that leaves it a few threads to
  spare, against 64 clients at once.
* ``descriptors``: 1,100 idle connections against a 1,024-descriptor limit, and
  300 against 256 with the default settings; the daemon must not spin, must
  serve the next client within seconds (an idle connection makes room), and
  again once the idle ones close.
* ``request-roots``: 1,000 folders named by requests; watched roots, threads,
  inotify instances and idle CPU afterwards, and after a restart.

Mounting a tmpfs and making a cgroup need root; without it those rows say
``skipped`` and why (the suite covers the same paths with RLIMIT_FSIZE and
injected failures: tests/test_index_degraded.py, tests/test_server_limits.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import socket
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from memoryd.errors import MemorydError

PROJECT = "relbench"


class Daemon(Protocol):
    home: Path
    root: Path
    socket: Path
    proc: subprocess.Popen[bytes] | None

    @property
    def state_dir(self) -> Path: ...

    def start(self, timeout: float = ..., **popen: Any) -> float: ...

    def stop(self) -> None: ...

    def client(self) -> Any: ...


NewDaemon = Callable[[Path, str], Daemon]


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def threads_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


def inotify_instances(pid: int) -> int:
    count = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            count += os.readlink(fd) == "anon_inode:inotify"
    return count


def _write(folder: Path, name: str, body: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(f"---\ndescription: {name}\ntype: project\n---\n{body}\n")


def _status(d: Daemon) -> dict[str, Any]:
    with d.client() as c:
        result: dict[str, Any] = c.status()
        return result


def _wait(predicate: Callable[[], bool], timeout: float) -> float | None:
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        with contextlib.suppress(MemorydError, OSError):
            if predicate():
                return time.perf_counter() - started
        time.sleep(0.2)
    return None


def indexed(d: Daemon) -> set[str]:
    """Every path the index holds below the daemon's root, parsed or not."""
    with d.client() as c:
        listing = c.list(str(d.root))
    return {f["path"] for f in listing["files"]} | {e["path"] for e in listing["errors"]}


def _converged(d: Daemon, saved: list[str]) -> bool:
    disk = {str(p) for p in d.root.rglob("*.md")}
    return indexed(d) == disk and _status(d)["index"]["state"] == "ok" and set(saved) <= disk


def _mount_tmpfs(path: Path, size: str) -> str | None:
    """Mount a tmpfs of ``size`` at ``path``; the reason when that is not possible."""
    path.mkdir(parents=True, exist_ok=True)
    out = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    return None if out.returncode == 0 else (out.stderr.strip() or "mount failed")


def _mixed_load(d: Daemon, seconds: float, tag: str) -> dict[str, Any]:
    """Saves, memory edits and reads for ``seconds``: counts by outcome."""
    counts: dict[str, Any] = {"saves": 0, "pending": 0, "reads": 0, "errors": 0, "internal": 0}
    saved: list[str] = []
    worst_save = 0.0
    end, n = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        n += 1
        _write(d.root / "incoming", f"project_{tag}_{n}.md", f"{tag} memory {n} " * 50)
        try:
            with d.client() as c:
                started = time.perf_counter()
                out = c.save(
                    str(d.root),
                    PROJECT,
                    session=f"2026-01-{n % 28 + 1:02d}-{n // 60 % 24:02d}-{n % 60:02d}",
                    session_summary=f"{tag} save {n}",
                )
                worst_save = max(worst_save, time.perf_counter() - started)
                counts["saves"] += 1
                counts["pending"] += bool(out.get("index_pending"))
                saved.append(out["path"])
                c.select(f"{tag} memory", str(d.root), ranker="local")
                c.status()
                counts["reads"] += 2
        except MemorydError as exc:
            counts["errors"] += 1
            counts["internal"] += getattr(exc, "code", "") == "internal"
        time.sleep(0.05)
    counts["saved"], counts["worst_save_s"] = saved, round(worst_save, 2)
    return counts


def full_disk(new_daemon: NewDaemon, workdir: Path, row: Callable[..., Any]) -> Any:
    d = new_daemon(workdir, "fulldisk")
    state = d.state_dir
    refused = _mount_tmpfs(state, "6m")
    if refused is not None:
        return row("full disk (tmpfs)", held=None, note=f"skipped: {refused}")
    try:
        for i in range(100):
            _write(d.root / "seed", f"feedback_seed_{i}.md", f"seed memory {i}")
        d.start()
        # ~12 MB of new memories: their rows and full-text postings outgrow 6 MB.
        for i in range(2400):
            _write(d.root / "bulk", f"project_bulk_{i}.md", f"bulk{i} " * 700)
        degraded = _wait(lambda: _status(d)["index"]["state"] == "degraded", 120)
        load = _mixed_load(d, 8.0, "fulldisk")
        status = _status(d)["index"]
        subprocess.run(["mount", "-o", "remount,size=256m", str(state)], check=True)
        converge = _wait(lambda: _converged(d, load["saved"]), 300)
        lost = len(set(load["saved"]) - indexed(d))
        held = bool(degraded is not None and converge is not None and lost == 0)
        held = held and load["internal"] == 0 and load["errors"] == 0
        note = (
            f"degraded after {degraded or 0:.1f} s ({status['reason']}); during it "
            f"{load['saves']} saves acknowledged ({load['pending']} index_pending, slowest "
            f"{load['worst_save_s']} s), {load['reads']} reads answered; tmpfs grown, converged "
            f"in {converge or 0:.1f} s"
        )
        return row("full disk (6 MB tmpfs index)", lost, converge or 0.0, load, held, note, d)
    finally:
        d.stop()
        subprocess.run(["umount", "-l", str(state)], check=False)


def held_lock(new_daemon: NewDaemon, workdir: Path, row: Callable[..., Any], seconds: float) -> Any:
    d = new_daemon(workdir, "lock")
    for i in range(300):
        _write(d.root / "seed", f"feedback_seed_{i}.md", f"seed memory {i}")
    d.start()
    try:
        conn = sqlite3.connect(str(d.state_dir / "index.db"), isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        load = _mixed_load(d, seconds, "lock")
        status = _status(d)["index"]
        conn.execute("ROLLBACK")
        conn.close()
        converge = _wait(lambda: _converged(d, load["saved"]), 300)
        lost = len(set(load["saved"]) - indexed(d))
        held = converge is not None and lost == 0 and load["internal"] == 0
        held = held and load["errors"] == 0 and status["state"] == "degraded"
        note = (
            f"lock held {seconds:g} s: {load['saves']} saves acknowledged ({load['pending']} "
            f"index_pending, slowest {load['worst_save_s']} s), {load['reads']} reads answered; "
            f"converged {converge or 0:.1f} s after the release"
        )
        return row(f"write lock held {seconds:g} s", lost, converge or 0.0, load, held, note, d)
    finally:
        d.stop()


def _hammer(sock: Path, root: str, requests: int, out: list[str]) -> None:
    for _ in range(requests):
        try:
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(60)
            s.connect(str(sock))
            with contextlib.suppress(OSError):
                s.sendall(json.dumps({"id": 1, "method": "list", "params": {"dir": root}}).encode())
                s.sendall(b"\n")
            line = s.makefile("rb").readline()
            s.close()
            answer = json.loads(line) if line else {}
            out.append("ok" if "result" in answer else answer.get("error", {}).get("code", "none"))
        except (OSError, ValueError) as exc:
            out.append(type(exc).__name__)


def thread_limit(new_daemon: NewDaemon, workdir: Path, row: Callable[..., Any]) -> Any:
    group = Path("/sys/fs/cgroup/pids") / f"memoryd-bench-{os.getpid()}"
    try:
        group.mkdir()
    except OSError as exc:
        return row("thread limit (pids cgroup)", held=None, note=f"skipped: {exc.strerror}")
    d = new_daemon(workdir, "threads")
    for i in range(200):
        _write(d.root, f"feedback_{i}.md", f"memory {i}")
    try:
        d.start()
        assert d.proc is not None
        spare = 6
        (group / "pids.max").write_text(str(threads_of(d.proc.pid) + spare))
        (group / "cgroup.procs").write_text(str(d.proc.pid))
        answers: list[str] = []
        clients = [
            threading.Thread(target=_hammer, args=(d.socket, str(d.root), 20, answers))
            for _ in range(64)
        ]
        for t in clients:
            t.start()
        for t in clients:
            t.join()
        after = _status(d)
        Path("/sys/fs/cgroup/pids/cgroup.procs").write_text(str(d.proc.pid))
        kinds = {k: answers.count(k) for k in sorted(set(answers))}
        held = d.proc.poll() is None and after["state"] == "ready" and "internal" not in kinds
        held = held and set(kinds) <= {"ok", "busy"}
        note = f"{spare} threads to spare, 64 clients x 20: {kinds}; status after: ready"
        load = {"errors": len(answers) - kinds.get("ok", 0), "internal": kinds.get("internal", 0)}
        return row("thread limit (pids cgroup)", 0, 0.0, load, held, note, d)
    finally:
        d.stop()
        with contextlib.suppress(OSError):
            group.rmdir()


def descriptor_limit(
    new_daemon: NewDaemon,
    workdir: Path,
    row: Callable[..., Any],
    *,
    fds: int = 1024,
    clients: int = 1100,
    config: str = "max_connections: 2000\nidle_timeout: 10\n",  # the fd limit bites first
) -> Any:
    """``clients`` connections that each read the index once, then idle, under ``fds``.

    Held: the daemon spends under 0.05 core while they idle, serves the next
    client (not ``busy``: an idle one makes room) within seconds, and serves
    again once they close.
    """
    d = new_daemon(workdir, "fds")
    if config:
        path = d.home / "config" / "memoryd" / "config.yaml"
        path.parent.mkdir(parents=True)
        path.write_text(config)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
    d.start(preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (fds, fds)))
    assert d.proc is not None
    idle: list[socket.socket] = []
    request = json.dumps({"id": 1, "method": "list", "params": {"dir": str(d.root)}}).encode()
    try:
        for _ in range(clients):
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(30)
            s.connect(str(d.socket))
            with contextlib.suppress(OSError):  # answered busy and closed: it stays idle
                s.sendall(request + b"\n")
                s.makefile("rb").readline()
            idle.append(s)
        time.sleep(1.0)
        before = cpu_s(d.proc.pid)
        time.sleep(3.0)
        spin = (cpu_s(d.proc.pid) - before) / 3.0
        started = time.perf_counter()
        answer: list[str] = []
        _hammer(d.socket, str(d.root), 1, answer)
        first = time.perf_counter() - started
    finally:
        for s in idle:
            s.close()
    try:

        def served_now() -> bool:
            after: list[str] = []
            _hammer(d.socket, str(d.root), 1, after)
            return after == ["ok"]

        served = _wait(served_now, 30)
        held = answer == ["ok"] and first < 5.0 and spin < 0.05 and served is not None
        note = (
            f"{clients:,} idle connections under {fds:,} fds: daemon CPU {spin:.3f} core while "
            f"they idle; the next client answered '{answer[0]}' in {first:.2f} s; after they "
            f"close, served in {served or 0:.2f} s"
        )
        load = {"errors": int(answer != ["ok"]), "internal": int(answer == ["internal"])}
        name = f"{clients:,} idle connections, {fds:,} fds"
        return row(name, 0, served or 0.0, load, held, note, d)
    finally:
        d.stop()


def request_roots(new_daemon: NewDaemon, workdir: Path, row: Callable[..., Any]) -> Any:
    d = new_daemon(workdir, "roots")
    folders = [d.home / "many" / f"p{i}" / "memory" for i in range(1000)]
    for i, folder in enumerate(folders):
        _write(folder, "feedback_a.md", f"memory of project {i}")
    d.start()
    assert d.proc is not None
    try:
        started = time.perf_counter()
        with d.client() as c:
            for folder in folders:
                c.list(str(folder))
        elapsed = time.perf_counter() - started
        time.sleep(2.0)
        before = cpu_s(d.proc.pid)
        time.sleep(5.0)
        idle_cpu = (cpu_s(d.proc.pid) - before) / 5.0
        status = _status(d)
        watched = len(status["roots"])
        threads, inotify = threads_of(d.proc.pid), inotify_instances(d.proc.pid)
        d.stop()
        d.start()
        after = len(_status(d)["roots"])
        held = watched <= 65 and after <= 65 and threads < 200 and idle_cpu < 0.05
        note = (
            f"1,000 folders listed in {elapsed:.1f} s: {watched} roots watched "
            f"({after} after a restart), {threads} threads, {inotify} inotify instances, "
            f"idle CPU {idle_cpu:.3f} core"
        )
        return row("1,000 request roots", 0, elapsed, {"errors": 0, "internal": 0}, held, note, d)
    finally:
        d.stop()
