"""bench/reliability.py's ``same-session`` scenario: many writers saving one session at once.

Daemon clients (one connection each, ``--clients`` of them, ``--requests`` // 4
saves each), two processes saving in-process through the session module, and
``memoryd save`` runs (the CLI, a connection each) all add a decision
of their own to the same session file at the same time. Held when every
acknowledged decision is in the file afterwards and in ``load_last``'s answer.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _daemon import daemon_env
from _limits import Daemon, NewDaemon

from memoryd.errors import RequestError

PROJECT = "relbench"
SESSION = "2026-01-02-10-00"
IN_PROCESS = """
import sys
from memoryd.sessions import files
from memoryd.methods import Save
from memoryd.params import decode
folder, count, tag = sys.argv[1], int(sys.argv[2]), sys.argv[3]
for n in range(count):
    params = {"dir": folder, "project": "relbench", "session": sys.argv[4],
              "session_summary": "racing", "key_decisions": [f"{tag} {n}"]}
    files.save(files.save_request(decode(Save, params)))
"""
PROCESSES, PROCESS_SAVES, CLI_SAVES = 2, 40, 10


def same_session(
    new_daemon: NewDaemon, workdir: Path, row: Callable[..., Any], clients: int, saves: int
) -> Any:
    d = new_daemon(workdir, "same-session")
    d.start()
    acked: list[str] = []
    counts = {"errors": 0, "internal": 0}
    lock = threading.Lock()
    started = time.perf_counter()
    try:
        procs = [_in_process(d, f"process{k}") for k in range(PROCESSES)]
        threads = [
            threading.Thread(target=_client, args=(d, k, saves, acked, counts, lock))
            for k in range(clients)
        ]
        threads.append(threading.Thread(target=_cli_saves, args=(d, acked, counts, lock)))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for k, proc in enumerate(procs):
            if proc.wait(600) == 0:
                acked += [f"process{k} {n}" for n in range(PROCESS_SAVES)]
            else:
                counts["errors"] += 1
        text = (d.root / f"{SESSION}-{PROJECT}.md").read_text(encoding="utf-8")
        with d.client() as c:
            loaded = c.call("load_last", {"dir": str(d.root), "project": PROJECT})["content"]
        lost = sum(1 for a in acked if not (_has(text, a) and _has(loaded, a)))
        note = (
            f"{len(acked)} saves acknowledged by {clients} clients, {PROCESSES} processes "
            f"and {CLI_SAVES} CLI runs in {time.perf_counter() - started:.1f} s; {lost} lost"
        )
        return row(
            "same-session: concurrent saves of one session",
            lost,
            load=counts,
            held=lost == 0 and counts["internal"] == 0,
            note=note,
            d=d,
        )
    finally:
        d.stop()


def _has(text: str, decision: str) -> bool:
    return f"- {decision}\n" in text


def _params(d: Daemon, decision: str) -> dict[str, Any]:
    return {
        "dir": str(d.root),
        "project": PROJECT,
        "session": SESSION,
        "session_summary": "racing",
        "key_decisions": [decision],
    }


def _client(
    d: Daemon, k: int, saves: int, acked: list[str], counts: dict[str, int], lock: threading.Lock
) -> None:
    with d.client() as c:
        for n in range(saves):
            decision = f"client{k} {n}"
            try:
                c.call("save", _params(d, decision))
            except RequestError as exc:
                with lock:
                    counts["internal" if exc.code == "internal" else "errors"] += 1
                continue
            with lock:
                acked.append(decision)


def _in_process(d: Daemon, tag: str) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-c", IN_PROCESS, str(d.root), str(PROCESS_SAVES), tag, SESSION]
    return subprocess.Popen(argv, env=daemon_env(d.home, "INFO"))


def _cli_saves(d: Daemon, acked: list[str], counts: dict[str, int], lock: threading.Lock) -> None:
    """``memoryd save`` runs, one after another, each a process of its own asking the daemon."""
    for n in range(CLI_SAVES):
        decision = f"cli {n}"
        argv = [sys.executable, "-m", "memoryd", "save", "--dir", str(d.root)]
        argv += ["--project", PROJECT, "--session", SESSION, "--summary", "racing"]
        argv += ["--decision", decision, "--socket", str(d.socket), "--require-daemon"]
        env = daemon_env(d.home, "INFO")
        try:
            done = subprocess.run(argv, check=False, env=env, capture_output=True)
        except OSError:
            done = None
        with lock:
            if done is not None and done.returncode == 0:
                acked.append(decision)
            else:
                counts["errors"] += 1
