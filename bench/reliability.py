"""Faults and floods against a real daemon: what was lost, how long to converge.

Usage: python bench/reliability.py [--cycles 20] [--creates 5000] [--deletes 2000]
       [--clients 32] [--requests 200] [--lock-seconds 30] [--only NAME] [--json]

Each scenario runs a real ``memoryd serve`` subprocess with a private HOME/XDG
world (bench/_daemon.py's environment) and reports, in one table:

* ``lost``: what the daemon acknowledged (a save) or what is on disk (a file)
  but is missing or wrong afterwards. Must be 0.
* ``converge s``: from the end of the fault to the index matching the disk.
  The baseline, measured in the same run, is a bare stat-and-read walk over
  the same tree (what any rescan must at least do).
* ``errors``: failed requests (for the flood) or unexpected error answers;
  ``internal`` answers are counted separately and must be 0.
* ``peak RSS``: VmHWM of the daemon at the end of the scenario.
* ``verdict``: ``held`` or ``FAILED`` by the scenario's own test (nothing lost
  and no ``internal`` answer, plus what it is about), or ``skipped`` with why.

Scenarios (``--only`` names): kill -9 during saves (``kill9``, ``--cycles``
restarts), a create/delete burst (``burst``), ``rm -rf`` and recreate of a root
(``rm-root``), hostile files and one save (``hostile``), ``--clients`` x
``--requests`` mixed requests (``flood``), three damaged indexes (``damaged``);
the limits (bench/_limits.py): ``full-disk``, ``lock``, ``threads``,
``descriptors``, ``request-roots``; the watcher (bench/_rel_watch.py):
``overflow``, ``swap-root``; concurrent saves of one session (``same-session``,
bench/_rel_saves.py); a memory swapped for an outside link (``symlink-race``);
the daemon's own files deleted (``lost-files``, bench/_rel_lost_files.py).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _limits
import _rel_lost_files
import _rel_saves
import _rel_symlink
import _rel_watch
from _daemon import daemon_env

from memoryd.errors import MemorydError
from memoryd.ipc.client import Client

PROJECT = "relbench"


@dataclass
class Row:
    scenario: str
    lost: int = 0
    converge_s: float = 0.0
    baseline_s: float = 0.0
    errors: int = 0
    internal: int = 0
    peak_rss_mb: float = 0.0
    note: str = ""
    held: bool | None = None
    """The scenario's own verdict; None: nothing lost and no internal answer."""
    skipped: bool = False

    @property
    def verdict(self) -> str:
        if self.skipped:
            return "skipped"
        held = self.held if self.held is not None else self.lost == 0 and self.internal == 0
        return "held" if held else "FAILED"


@dataclass
class Daemon:
    """A daemon that can be killed and started again on the same state and socket."""

    home: Path
    root: Path
    socket: Path
    proc: subprocess.Popen[bytes] | None = None
    log: list[str] = field(default_factory=list)

    def start(self, timeout: float = 120.0, **popen: Any) -> float:
        argv = [sys.executable, "-m", "memoryd", "serve", "--socket", str(self.socket)]
        argv += ["--state-dir", str(self.state_dir), "--root", str(self.root)]
        started = time.perf_counter()
        with (self.home / "daemon.log").open("ab") as out:
            self.proc = subprocess.Popen(
                argv, env=daemon_env(self.home, "INFO"), stdout=out, stderr=out, **popen
            )
        while time.perf_counter() - started < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError(f"daemon exited {self.proc.returncode}: {self.log_tail()}")
            try:
                with Client(self.socket, timeout=2) as c:
                    if c.status()["state"] == "ready":
                        return time.perf_counter() - started
            except MemorydError:
                pass
            time.sleep(0.02)  # a tight loop of status calls slows the first index it waits on
        raise RuntimeError(f"daemon not ready in {timeout} s: {self.log_tail()}")

    @property
    def state_dir(self) -> Path:
        return self.home / "state" / "memoryd"

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(30)

    def peak_rss_mb(self) -> float:
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def log_text(self) -> str:
        path = self.home / "daemon.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def log_tail(self) -> str:
        return self.log_text()[-2000:]

    def client(self) -> Client:
        return Client(self.socket, timeout=60)


def new_daemon(workdir: Path, name: str) -> Daemon:
    home = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=workdir))
    run_dir = Path(tempfile.mkdtemp(prefix="mdr-", dir="/tmp"))
    root = home / "memory"
    root.mkdir()
    return Daemon(home=home, root=root, socket=run_dir / "memoryd.sock")


def write_files(root: Path, start: int, count: int, per_dir: int = 250) -> None:
    for i in range(start, start + count):
        folder = root / f"d{i // per_dir}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"feedback_m{i}.md").write_text(
            f"---\nname: m{i}\ndescription: reliability memory {i}\ntype: feedback\n---\n"
            f"body of memory {i}\n"
        )


def bare_walk_s(root: Path) -> float:
    """The baseline: stat and read every memory file under ``root`` once."""
    started = time.perf_counter()
    for directory, _dirs, files in os.walk(root):
        for name in files:
            if name.endswith(".md"):
                with open(os.path.join(directory, name), "rb") as fh:
                    fh.read()
    return time.perf_counter() - started


def index_gap(d: Daemon) -> int:
    """Files on disk missing from the index plus indexed files no longer on disk."""
    disk = {str(p) for p in d.root.rglob("*.md")}
    return len(disk) if not d.root.is_dir() else len(disk ^ _limits.indexed(d))


def wait_converged(d: Daemon, timeout: float = 300.0) -> tuple[float, int]:
    started = time.perf_counter()
    gap = index_gap(d)
    while gap and time.perf_counter() - started < timeout:
        time.sleep(0.1)
        gap = index_gap(d)
    return time.perf_counter() - started, gap


# -- scenarios ------------------------------------------------------------------


def kill9_saves(workdir: Path, cycles: int) -> Row:
    d = new_daemon(workdir, "kill9")
    acked: dict[str, str] = {}
    errors = 0
    rng = random.Random(5)
    for cycle in range(cycles):
        d.start()
        stop = threading.Event()

        def saver(cycle: int = cycle, stop: threading.Event = stop) -> None:
            nonlocal errors
            n = 0
            while not stop.is_set():
                # A year per cycle: no save overwrites an earlier acknowledged one.
                month, hour, minute = n // 1440 % 12 + 1, n // 60 % 24, n % 60
                session = f"{2000 + cycle}-{month:02d}-01-{hour:02d}-{minute:02d}"
                summary = f"cycle {cycle} save {n}: " + "detail " * rng.randint(10, 400)
                try:
                    with d.client() as c:
                        out = c.save(str(d.root), PROJECT, session=session, session_summary=summary)
                    acked[out["path"]] = summary
                except MemorydError:
                    errors += 1  # killed mid-request: not acknowledged, so not "lost"
                    return
                n += 1

        thread = threading.Thread(target=saver)
        thread.start()
        time.sleep(rng.uniform(0.2, 0.6))
        d.kill()
        stop.set()
        thread.join()
    ready_s = d.start()
    lost = 0
    for path, summary in acked.items():
        try:
            text = Path(path).read_text()
        except OSError:
            lost += 1
            continue
        lost += " ".join(summary.split()) not in " ".join(text.split())
    temp_left = len(list(d.root.rglob(".*.tmp")))
    converge, gap = wait_converged(d)
    row = Row("kill -9 during saves", lost + gap, ready_s + converge, bare_walk_s(d.root), errors)
    row.note = (
        f"{cycles} kills, {len(acked)} acked saves, {temp_left} temp files left;"
        " errors = saves cut by the kill, never acknowledged"
    )
    row.peak_rss_mb = d.peak_rss_mb()
    finish(d)
    return row


def burst(workdir: Path, creates: int, deletes: int) -> Row:
    d = new_daemon(workdir, "burst")
    d.start()
    write_files(d.root, 0, creates)
    paths = sorted(d.root.rglob("*.md"))
    for path in random.Random(3).sample(paths, deletes):
        path.unlink()
    converge, gap = wait_converged(d)
    row = Row(f"{creates:,} creates + {deletes:,} deletes", gap, converge, bare_walk_s(d.root))
    row.peak_rss_mb = d.peak_rss_mb()
    finish(d)
    return row


def rm_and_recreate(workdir: Path) -> Row:
    d = new_daemon(workdir, "rmrf")
    write_files(d.root, 0, 500)
    d.start()
    shutil.rmtree(d.root)
    time.sleep(1.0)
    write_files(d.root, 1000, 500)
    converge, gap = wait_converged(d, timeout=120)
    row = Row("rm -rf + recreate root", gap, converge, bare_walk_s(d.root))
    row.peak_rss_mb = d.peak_rss_mb()
    finish(d)
    return row


def _client_load(sock: str, root: str, requests: int, seed: int) -> tuple[int, int]:
    rng = random.Random(seed)
    errors = internal = 0
    with Client(sock, timeout=60) as c:
        for n in range(requests):
            kind = rng.choice(["status", "list", "select", "load_last", "context", "save", "bad"])
            try:
                if kind == "status":
                    c.status()
                elif kind == "list":
                    c.list(root)
                elif kind == "select":
                    c.select("reliability memory 42", root, ranker="local")
                elif kind == "load_last":
                    c.load_last(root, PROJECT)
                elif kind == "context":
                    c.context("continue the reliability work", root, project=PROJECT)
                elif kind == "save":
                    c.save(root, PROJECT, session=f"2025-06-{seed % 28 + 1:02d}-10-{n % 60:02d}")
                else:
                    c.call("list", {"dir": root + "\x00"})
            except MemorydError as exc:
                code = getattr(exc, "code", "")
                internal += code == "internal"
                errors += kind != "bad" or code != "invalid_params"
    return errors, internal


def flood(workdir: Path, clients: int, requests: int) -> Row:
    d = new_daemon(workdir, "flood")
    write_files(d.root, 0, 200)
    d.start()
    started = time.perf_counter()
    with mp.Pool(clients) as pool:
        args = [(str(d.socket), str(d.root), requests, seed) for seed in range(clients)]
        results = pool.starmap(_client_load, args)
    elapsed = time.perf_counter() - started
    _converge, gap = wait_converged(d)
    row = Row(f"{clients} clients x {requests} mixed", gap, elapsed, bare_walk_s(d.root))
    row.errors = sum(e for e, _ in results)
    row.internal = sum(i for _, i in results)
    row.note = f"{clients * requests / elapsed:,.0f} req/s; converge column = wall time"
    row.peak_rss_mb = d.peak_rss_mb()
    finish(d)
    return row


def _truncate(db: Path) -> None:
    with db.open("r+b") as fh:
        fh.truncate(db.stat().st_size // 3)


def _garbage_header(db: Path) -> None:
    with db.open("r+b") as fh:
        fh.write(random.Random(1).randbytes(100))


def _garbage_pages(db: Path) -> None:
    size = db.stat().st_size
    with db.open("r+b") as fh:
        fh.seek(8192)
        fh.write(random.Random(2).randbytes(max(0, size - 12288)))
    Path(f"{db}-wal").unlink(missing_ok=True)


def damaged_index(workdir: Path, name: str, corrupt: Callable[[Path], None]) -> Row:
    d = new_daemon(workdir, "corrupt")
    write_files(d.root, 0, 2000)
    d.start()
    d.stop()
    corrupt(d.state_dir / "index.db")
    ready_s = d.start()
    converge, gap = wait_converged(d)
    row = Row(f"damaged index: {name}", gap, ready_s + converge, bare_walk_s(d.root))
    row.errors = int("index.recovered_from_damage" not in d.log_text())
    row.note = f"ready after recovery in {ready_s:.2f} s"
    row.peak_rss_mb = d.peak_rss_mb()
    finish(d)
    return row


def hostile_files(workdir: Path) -> Row:
    """A 300 KB line with ``://``, a 120 KB summary and an alias bomb, against one save."""
    d = new_daemon(workdir, "hostile")
    write_files(d.root, 0, 50)
    d.start()
    with d.client() as c:
        started = time.perf_counter()
        c.save(str(d.root), PROJECT, session="2025-01-01-00-00", session_summary="plain " * 150)
        baseline = time.perf_counter() - started
        (d.root / "feedback_long_line.md").write_text(
            "---\ndescription: one long line\n---\n" + "sk-" * 100_000 + "://\n"
        )
        levels = ["a: &a [x, x, x, x, x, x, x, x, x]"]
        levels += [
            f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 9) + "]"
            for i in range(7)
        ]
        bomb = (
            "---\nproject-name: relbench\n" + "\n".join(levels) + "\n---\n## Session summary\nx\n"
        )
        (d.root / f"2025-01-02-00-00-{PROJECT}.md").write_text(bomb)
        summary = "see postgres://" + "u" * 60_000 + " sk-" * 20_000
        started = time.perf_counter()
        saved = c.save(str(d.root), PROJECT, session="2025-01-03-00-00", session_summary=summary)
        waited = time.perf_counter() - started
        _converge, gap = wait_converged(d)
        # Issue 21: a 1 MB body of "a+a+...a+ x/y" (its citations took hours) and names that
        # are not UTF-8 or hold a newline (a crash at every start), while status is asked.
        slow_name = d.root / "project_a_plus.md"
        slow_name.write_text("---\ndescription: a plus\n---\n" + "a+" * 500_000 + " x/y\n")
        for raw in (b"bad_\xff\xfe.md", b"new\nline.md"):
            with open(os.fsencode(d.root) + b"/" + raw, "wb") as fh:
                fh.write(b"---\ndescription: x\n---\nx\n")
        started, worst = time.perf_counter(), 0.0
        while str(slow_name) not in {f["path"] for f in c.list(str(d.root))["files"]}:
            asked = time.perf_counter()
            c.status()
            worst = max(worst, time.perf_counter() - asked)
            if time.perf_counter() - started > 120:
                break
        a_plus = time.perf_counter() - started
        errors = {e["path"]: e["error"] for e in c.list(str(d.root))["errors"]}
        last = c.load_last(str(d.root), PROJECT)
    bomb_path = str(d.root / f"2025-01-02-00-00-{PROJECT}.md")
    bomb_refused = "aliases are not allowed" in errors.get(bomb_path, "")
    names = sum("shown escaped" in e for e in errors.values())
    row = Row("hostile files + one save", gap + (last["path"] != saved["path"]), waited, baseline)
    row.errors = int(not bomb_refused) + (2 - names)
    row.held = row.lost == 0 and row.errors == 0 and a_plus < 10
    row.note = (
        f"save after a 300 KB line and with a 120 KB summary, {waited:.3f} s vs a plain save"
        f" {baseline:.3f} s (baseline column); alias bomb refused: {bomb_refused}; a 1 MB"
        f" a+a+... body indexed in {a_plus:.2f} s, slowest status meanwhile {worst * 1000:.0f} ms;"
        f" {names} of 2 bad names listed as errors"
    )
    row.peak_rss_mb = d.peak_rss_mb()
    finish(d)
    return row


def limit_row(
    scenario: str,
    lost: int = 0,
    converge_s: float = 0.0,
    load: dict[str, Any] | None = None,
    held: bool | None = None,
    note: str = "",
    d: Daemon | None = None,
) -> Row:
    """A row for bench/_limits.py's scenarios (``held=None`` and no daemon: skipped)."""
    load = load or {}
    rss = d.peak_rss_mb() if d is not None else 0.0
    counts = int(load.get("errors", 0)), int(load.get("internal", 0))
    return Row(scenario, lost, converge_s, 0.0, *counts, rss, note, held, d is None)


def finish(d: Daemon) -> None:
    d.stop()
    shutil.rmtree(d.socket.parent, ignore_errors=True)


# -- main ---------------------------------------------------------------------


SCENARIOS = (
    *("kill9", "burst", "rm-root", "hostile", "flood", "damaged"),
    *("full-disk", "lock", "threads", "descriptors", "request-roots"),
    *("overflow", "swap-root"),
    "same-session",
    "symlink-race",
    "lost-files",
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--cycles", type=int, default=20)
    ap.add_argument("--creates", type=int, default=5000)
    ap.add_argument("--deletes", type=int, default=2000)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--lock-seconds", type=float, default=30.0)
    ap.add_argument("--json", action="store_true")
    ap.add_argument(
        "--only", action="append", choices=SCENARIOS, help="run only this scenario (repeatable)"
    )
    args = ap.parse_args(argv)
    load_before = Path("/proc/loadavg").read_text().split()[0]
    workdir = Path(tempfile.mkdtemp(prefix="memoryd-reliability-"))
    try:
        runs: dict[str, Callable[[], list[Row]]] = {
            "kill9": lambda: [kill9_saves(workdir, args.cycles)],
            "burst": lambda: [burst(workdir, args.creates, args.deletes)],
            "rm-root": lambda: [rm_and_recreate(workdir)],
            "hostile": lambda: [hostile_files(workdir)],
            "flood": lambda: [flood(workdir, args.clients, args.requests)],
            "damaged": lambda: [
                damaged_index(workdir, "truncated", _truncate),
                damaged_index(workdir, "garbage header", _garbage_header),
                damaged_index(workdir, "garbage pages, WAL gone", _garbage_pages),
            ],
            "full-disk": lambda: [_limits.full_disk(new_daemon, workdir, limit_row)],
            "lock": lambda: [_limits.held_lock(new_daemon, workdir, limit_row, args.lock_seconds)],
            "threads": lambda: [_limits.thread_limit(new_daemon, workdir, limit_row)],
            "descriptors": lambda: [
                _limits.descriptor_limit(new_daemon, workdir, limit_row),
                _limits.descriptor_limit(
                    new_daemon, workdir, limit_row, fds=256, clients=300, config=""
                ),
            ],
            "request-roots": lambda: [_limits.request_roots(new_daemon, workdir, limit_row)],
            "overflow": lambda: [_rel_watch.overflow(new_daemon, workdir, limit_row)],
            "swap-root": lambda: [_rel_watch.swap_root(new_daemon, workdir, limit_row)],
            "same-session": lambda: [
                _rel_saves.same_session(
                    new_daemon, workdir, limit_row, args.clients // 2, args.requests // 4
                )
            ],
            "symlink-race": lambda: [_rel_symlink.symlink_race(new_daemon, workdir, limit_row)],
            "lost-files": lambda: [f(new_daemon, workdir, limit_row) for f in _rel_lost_files.RUNS],
        }
        chosen = args.only or SCENARIOS
        rows = [row for name in SCENARIOS if name in chosen for row in runs[name]()]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    load_after = Path("/proc/loadavg").read_text().split()[0]
    if args.json:
        print(json.dumps([{**r.__dict__, "verdict": r.verdict} for r in rows], indent=2))
    else:
        print_table(rows, load_before, load_after)
    return 0 if all(r.verdict != "FAILED" for r in rows) else 1


def print_table(rows: list[Row], load_before: str, load_after: str) -> None:
    print(f"loadavg before {load_before}, after {load_after}")
    head = ["scenario", "verdict", "lost", "converge s", "bare walk s", "errors", "internal"]
    head.append("peak RSS MB")
    print(" | ".join(f"{h:<40}" if i == 0 else f"{h:>11}" for i, h in enumerate(head)))
    print("-" * 134)
    for r in rows:
        cells: list[Any] = [r.scenario, r.verdict, r.lost, f"{r.converge_s:.2f}"]
        cells += [f"{r.baseline_s:.3f}", r.errors, r.internal, f"{r.peak_rss_mb:.0f}"]
        line = " | ".join(f"{c:<40}" if i == 0 else f"{c!s:>11}" for i, c in enumerate(cells))
        print(line + (f"  ({r.note})" if r.note else ""))


if __name__ == "__main__":
    sys.exit(main())
