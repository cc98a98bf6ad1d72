"""Client start-up: whole processes against a warm daemon, next to a bare ``python -c pass``.

Usage: python bench/startup_bench.py [--runs 20] [--before DIR] [--json]

Claude Code starts ``memoryd hook claude-code`` on every prompt (and once at
session start), and waits for it; each CLI call is a fresh process too. This
bench starts a real daemon (bench/_daemon.py) over a copy of
``examples/memory`` and times, as whole processes with this interpreter:

* ``python -c pass``: the baseline every ratio is taken against;
* the hook with a ``UserPromptSubmit`` event (it injects memories), and the
  same hook with the daemon **down** (no socket), and **hung** (a socket that
  accepts and never answers): once with no stall recorded in the last minute
  (the full wait), once just after one (what the next hooks of that minute
  pay), and for ``SessionStart`` (which waits at most half the budget); the
  hook's budget is 2 s for the whole process;
* ``memoryd select`` (``--require-daemon``) and ``memoryd status``;
* ``python -c "import <the service side>"``: what every command used to
  import before it knew whether a daemon would answer, for reference;
* with ``--before DIR`` (a source tree of an earlier revision, e.g. from
  ``git archive 00b3e6c | tar -x -C DIR``), the hook and ``select`` run from
  that tree too (through ``PYTHONPATH``), against the same daemon.

Commands run round-robin, ``--runs`` times each, so load from other processes
hits them alike. The table shows the median wall time and its 10th-90th
percentile range in ms, the median's ratio to the baseline (the target is
<= 2.5x for the hook with a daemon up, ``select`` and ``status``; a hook whose
daemon is down or hung must end within its 2 s budget, every run: the "max ms"
column), and the median CPU time (user + system) of the process with its
ratio: on a machine shared with other work, CPU time moves much less than
wall time does.
It also runs the hook once under ``-X importtime`` and lists any heavy module
it loaded (there should be none).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from _daemon import BenchDaemon, daemon_env, running_daemon

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "memory"
HEAVY = ("sqlite_utils", "sqlite3", "yaml", "structlog", "anthropic", "apscheduler", "watchdog")
TARGET_RATIO = 2.5
BUDGET_MS = 2000.0
RATIO_ROWS = ("hook claude-code", "select", "status")
FALLBACK_IMPORTS = (
    "import memoryd.service, memoryd.select.wiring, memoryd.indexer.sync, "
    "memoryd.staleness.checks, memoryd.integrations.claude_code, structlog"
)


def hook_event(name: str = "UserPromptSubmit") -> str:
    event = {
        "hook_event_name": name,
        "session_id": f"bench-{uuid.uuid4().hex}",
        "cwd": "/tmp",
        "prompt": "how do I run the tests in parallel?",
    }
    if name == "SessionStart":
        event["source"] = "startup"
    return json.dumps(event)


class Command:
    """One process to time: argv, the hook event it reads (if any), its env, a setup step."""

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        event: str | None = None,
        before_each: Callable[[], None] | None = None,
        budget: bool = False,
    ) -> None:
        self.argv, self.env, self.event = argv, env, event
        self.before_each = before_each
        self.budget = budget  # must end within the hook's budget, every run

    def stdin(self) -> str:
        return hook_event(self.event) if self.event else ""


@contextlib.contextmanager
def hung_socket(directory: Path) -> Iterator[Path]:
    """A socket that accepts connections and never answers: a hung daemon."""
    path = directory / "hung.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(64)
    try:
        yield path
    finally:
        server.close()


def commands(
    d: BenchDaemon, env: dict[str, str], before: Path | None, hung: Path
) -> dict[str, Command]:
    py, root = sys.executable, str(d.roots[0])
    memoryd = [py, "-m", "memoryd"]
    query = "how do I run the tests in parallel?"
    hook = [*memoryd, "hook", "claude-code", "--dir", root]
    select = [*memoryd, "select", query, "--dir", root, "--require-daemon"]
    down = {**env, "MEMORYD_SOCKET": str(hung.parent / "nothing-here.sock")}
    stalled = {**env, "MEMORYD_SOCKET": str(hung)}
    stall_record = Path(env["XDG_STATE_HOME"]) / "memoryd" / "hook-sessions" / "daemon-stall.json"

    def forget_stall() -> None:
        stall_record.unlink(missing_ok=True)

    cmds: dict[str, Command] = {
        "python -c pass": Command([py, "-c", "pass"], env),
        "hook claude-code": Command(hook, env, "UserPromptSubmit"),
        "hook, daemon down": Command(hook, down, "UserPromptSubmit", budget=True),
        "hook, daemon hung": Command(hook, stalled, "UserPromptSubmit", forget_stall, True),
        "hook, hung, after a stall": Command(hook, stalled, "UserPromptSubmit", budget=True),
        "SessionStart hook, hung": Command(hook, stalled, "SessionStart", forget_stall, True),
        "select": Command(select, env),
        "status": Command([*memoryd, "status"], env),
        "import fallback (old start-up)": Command([py, "-c", FALLBACK_IMPORTS], env),
    }
    if before is not None:
        old = {**env, "PYTHONPATH": str(before)}
        cmds["hook claude-code (--before)"] = Command(hook, old, "UserPromptSubmit")
        cmds["select (--before)"] = Command(select, old)
    return cmds


def run_once(argv: list[str], stdin: str, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system) milliseconds of one whole process."""
    # From a neutral directory, as the hook runs: started inside the repository,
    # `python -m memoryd` would import ./memoryd ahead of PYTHONPATH (--before).
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        argv,
        check=False,
        input=stdin,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tempfile.gettempdir(),
    )
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0 or "started one" in done.stderr:
        raise RuntimeError(f"{argv} failed or started a daemon:\n{done.stderr[-2000:]}")
    return elapsed * 1000, cpu * 1000


def heavy_imports(argv: list[str], env: dict[str, str]) -> list[str]:
    done = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]],
        check=False,
        input=hook_event(),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    names = {
        line.split("|")[-1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    return sorted(n for n in names if n.split(".")[0] in HEAVY)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--before", type=Path, default=None, help="an earlier source tree")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="memoryd-startup-"))
    try:
        root = work / "memory"
        shutil.copytree(EXAMPLES, root)
        with running_daemon([root]) as d, hung_socket(d.socket.parent) as hung:
            env = {**daemon_env(d.home, "WARNING"), "MEMORYD_SOCKET": str(d.socket)}
            # Installed code has its bytecode cached; without this the warm-up
            # could not cache it, and every run would compile memoryd again.
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            cmds = commands(d, env, args.before, hung)
            times: dict[str, list[float]] = {name: [] for name in cmds}
            cpus: dict[str, list[float]] = {name: [] for name in cmds}
            for cmd in cmds.values():  # warm-up: page cache, .pyc
                run_once(cmd.argv, cmd.stdin(), cmd.env)
            for _ in range(args.runs):
                for name, cmd in cmds.items():
                    if cmd.before_each is not None:
                        cmd.before_each()
                    wall, cpu = run_once(cmd.argv, cmd.stdin(), cmd.env)
                    times[name].append(wall)
                    cpus[name].append(cpu)
            heavy = heavy_imports(cmds["hook claude-code"].argv, env)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    bare = statistics.median(times["python -c pass"])
    bare_cpu = statistics.median(cpus["python -c pass"])
    rows: list[dict[str, Any]] = []
    for name, values in times.items():
        median = statistics.median(values)
        cmd = cmds[name]
        if name in RATIO_ROWS:
            verdict = "ok" if median / bare <= TARGET_RATIO else "MISSED"
        elif cmd.budget:
            verdict = "ok" if max(values) <= BUDGET_MS else "MISSED"
        else:
            verdict = ""
        rows.append(
            {
                "command": name,
                "median_ms": round(median, 1),
                "p10_ms": round(percentile(values, 0.1), 1),
                "p90_ms": round(percentile(values, 0.9), 1),
                "max_ms": round(max(values), 1),
                "ratio": round(median / bare, 2),
                "cpu_ms": round(statistics.median(cpus[name]), 1),
                "cpu_ratio": round(statistics.median(cpus[name]) / bare_cpu, 2),
                "target": verdict,
            }
        )
    loadavg = Path("/proc/loadavg").read_text().split()[:3]
    if args.json:
        print(json.dumps({"rows": rows, "hook_heavy_imports": heavy, "loadavg": loadavg}))
    else:
        print(f"{args.runs} runs each, round-robin; load average {' '.join(loadavg)}")
        print(
            f"{'command':<30} {'median ms':>9} {'p10-p90 ms':>14} {'max ms':>8} {'x bare':>7} "
            f"{'cpu ms':>7} {'x bare':>7}  target"
        )
        for row in rows:
            spread = f"{row['p10_ms']}-{row['p90_ms']}"
            print(
                f"{row['command']:<30} {row['median_ms']:>9} {spread:>14} {row['max_ms']:>8} "
                f"{row['ratio']:>6}x {row['cpu_ms']:>7} {row['cpu_ratio']:>6}x  {row['target']}"
            )
        print(
            "targets: hook (daemon up), select, status <= 2.5x bare (median); "
            "hook with the daemon down or hung <= 2000 ms (every run)"
        )
        print(f"heavy modules imported by the hook: {', '.join(heavy) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
