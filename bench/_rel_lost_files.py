"""bench/reliability.py's ``lost-files`` scenario: the daemon's own files deleted under load.

* index: ``index.db`` (with its ``-wal``/``-shm``) deleted, then
  replaced by a file of garbage, while clients select and memory files keep
  arriving; held when no answer is ``internal`` and the index matches the disk
  again within seconds of each loss.
* socket: the socket file deleted while a client asks ``status``
  every 50 ms; held when the daemon answers again within seconds (it binds the
  file again) and a second ``serve`` started meanwhile is refused, naming it.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _limits
from _daemon import daemon_env

from memoryd.errors import MemorydError

CONVERGE_LIMIT_S = 30.0


def _gap(d: Any) -> int:
    disk = {str(p) for p in d.root.rglob("*.md")}
    with contextlib.suppress(MemorydError, OSError):
        return len(disk ^ _limits.indexed(d))
    return len(disk)


def _converged_s(d: Any, since: float) -> float | None:
    """Seconds from ``since`` until the index matches the disk, None past the limit."""
    while time.perf_counter() - since < CONVERGE_LIMIT_S:
        if _gap(d) == 0:
            return time.perf_counter() - since
        time.sleep(0.1)
    return None


def _load(d: Any, stop: threading.Event, answers: list[str]) -> None:
    """Select and write a new memory file in turn until ``stop``."""
    n = 0
    while not stop.is_set():
        n += 1
        (d.root / f"feedback_load_{threading.get_ident()}_{n}.md").write_text(
            f"---\ndescription: load note {n}\n---\nbody {n}\n"
        )
        try:
            with d.client() as c:
                c.call("select", {"dir": str(d.root), "query": "load note", "ranker": "local"})
            answers.append("ok")
        except MemorydError as exc:
            answers.append(str(getattr(exc, "code", type(exc).__name__)))
        time.sleep(0.02)


def index_deleted(new_daemon: Callable[..., Any], workdir: Path, row: Callable[..., Any]) -> Any:
    d = new_daemon(workdir, "index-lost")
    for i in range(2000):
        folder = d.root / f"d{i // 250}"
        folder.mkdir(exist_ok=True)
        (folder / f"feedback_m{i}.md").write_text(f"---\ndescription: memory {i}\n---\nb {i}\n")
    d.start()
    db = d.state_dir / "index.db"
    answers: list[str] = []
    stop = threading.Event()
    threads = [threading.Thread(target=_load, args=(d, stop, answers)) for _ in range(4)]
    for thread in threads:
        thread.start()
    times: list[float | None] = []
    try:
        for lose in ("delete", "garbage"):
            time.sleep(1.0)
            for suffix in ("", "-wal", "-shm"):
                Path(f"{db}{suffix}").unlink(missing_ok=True)
            if lose == "garbage":
                db.write_bytes(b"not a database " * 1000)
            lost_at = time.perf_counter()
            time.sleep(2.0)  # the load goes on through the rebuild
            stop.set()
            for thread in threads:
                thread.join(30)
            times.append(_converged_s(d, lost_at))
            stop.clear()
            threads = [threading.Thread(target=_load, args=(d, stop, answers)) for _ in range(4)]
            for thread in threads:
                thread.start()
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
    try:
        kinds = {k: answers.count(k) for k in sorted(set(answers))}
        with d.client() as c:
            state = c.status()["index"]["state"]
        held = None not in times and "internal" not in kinds and state == "ok"
        shown = ", ".join("never" if t is None else f"{t:.1f} s" for t in times)
        note = (
            f"deleted, then replaced by garbage, under 4 clients: index matched the disk "
            f"{shown} after each; answers {kinds}; index state after: {state}"
        )
        load = {"errors": len(answers) - kinds.get("ok", 0), "internal": kinds.get("internal", 0)}
        worst = max((t or CONVERGE_LIMIT_S for t in times), default=0.0)
        return row("index.db deleted / replaced", _gap(d), worst, load, held, note, d)
    finally:
        d.stop()


def socket_deleted(new_daemon: Callable[..., Any], workdir: Path, row: Callable[..., Any]) -> Any:
    d = new_daemon(workdir, "socket-lost")
    d.start()
    answers: list[tuple[float, str]] = []
    stop = threading.Event()

    def ask() -> None:
        while not stop.is_set():
            try:
                with d.client() as c:
                    c.status()
                answers.append((time.perf_counter(), "ok"))
            except MemorydError as exc:
                answers.append((time.perf_counter(), str(getattr(exc, "code", "unreachable"))))
            time.sleep(0.05)

    asker = threading.Thread(target=ask)
    asker.start()
    try:
        time.sleep(1.0)
        d.socket.unlink()
        lost_at = time.perf_counter()
        argv = [sys.executable, "-m", "memoryd", "serve", "--socket", str(d.socket)]
        argv += ["--state-dir", str(d.state_dir), "--root", str(d.root)]
        env = daemon_env(d.home, "INFO")
        second = subprocess.run(argv, check=False, env=env, capture_output=True, timeout=120)
        time.sleep(1.0)
    finally:
        stop.set()
        asker.join(30)
    try:
        back = next((t - lost_at for t, kind in answers if t > lost_at and kind == "ok"), None)
        refused = second.returncode != 0 and b"already running" in second.stderr
        kinds = {k: [a for _, a in answers].count(k) for k in {a for _, a in answers}}
        held = back is not None and back < 5.0 and refused and "internal" not in kinds
        note = (
            f"answered again {back or 0:.2f} s after the socket file was deleted; a second "
            f"serve meanwhile: {'refused, naming it' if refused else second.stderr[-200:]!r}"
            f"; answers {json.dumps(kinds, sort_keys=True)}"
        )
        load = {"errors": 0, "internal": kinds.get("internal", 0)}
        return row("socket file deleted", 0, back or 0.0, load, held, note, d)
    finally:
        d.stop()


RUNS = (index_deleted, socket_deleted)
