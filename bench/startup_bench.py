"""Client start-up: whole processes against a warm daemon, next to a bare ``python -c pass``.

Usage: python bench/startup_bench.py [--runs 20] [--before DIR] [--json]

Claude Code starts ``memoryd hook claude-code`` on every prompt, and each CLI
call is a fresh process too, so their cost is mostly interpreter start-up plus
imports: the socket round trip itself is well under a millisecond. This bench
starts a real daemon (bench/_daemon.py) over a copy of ``examples/memory``
and times, as whole processes with this interpreter:

* ``python -c pass``: the baseline every ratio is taken against;
* the hook with a ``UserPromptSubmit`` event (it injects memories);
* ``memoryd select`` (``--require-daemon``) and ``memoryd status``;
* ``python -c "import <the in-process fallback>"``: what every command used
  to import before it knew whether a daemon would answer, for reference;
* with ``--before DIR`` (a source tree of an earlier revision, e.g. from
  ``git archive 00b3e6c | tar -x -C DIR``), the hook and ``select`` run from
  that tree too (through ``PYTHONPATH``), against the same daemon.

Commands run round-robin, ``--runs`` times each, so load from other processes
hits them alike. The table shows the median wall time and its 10th-90th
percentile range in ms, the median's ratio to the baseline (the target is
<= 2.5x), and the median CPU time (user + system) of the process with its
ratio: on a machine shared with other work, CPU time moves much less than
wall time does.
It also runs the hook once under ``-X importtime`` and lists any heavy module
it loaded (there should be none).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from _daemon import BenchDaemon, daemon_env, running_daemon

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "memory"
HEAVY = ("sqlite_utils", "sqlite3", "yaml", "structlog", "anthropic", "apscheduler", "watchdog")
TARGET_RATIO = 2.5
FALLBACK_IMPORTS = "import memoryd._cli_local, memoryd.integrations.claude_code, structlog"


def hook_event() -> str:
    return json.dumps(
        {
            "hook_event_name": "UserPromptSubmit",
            "session_id": f"bench-{uuid.uuid4().hex}",
            "cwd": "/tmp",
            "prompt": "how do I run the tests in parallel?",
        }
    )


Command = tuple[list[str], bool, dict[str, str]]


def commands(d: BenchDaemon, env: dict[str, str], before: Path | None) -> dict[str, Command]:
    """name -> (argv, needs a hook event on stdin, environment)."""
    py, root = sys.executable, str(d.roots[0])
    memoryd = [py, "-m", "memoryd"]
    query = "how do I run the tests in parallel?"
    hook = ["hook", "claude-code", "--dir", root]
    select = ["select", query, "--dir", root, "--require-daemon"]
    cmds: dict[str, Command] = {
        "python -c pass": ([py, "-c", "pass"], False, env),
        "hook claude-code": ([*memoryd, *hook], True, env),
        "select": ([*memoryd, *select], False, env),
        "status": ([*memoryd, "status"], False, env),
        "import fallback (old start-up)": ([py, "-c", FALLBACK_IMPORTS], False, env),
    }
    if before is not None:
        old = {**env, "PYTHONPATH": str(before)}
        cmds["hook claude-code (--before)"] = ([*memoryd, *hook], True, old)
        cmds["select (--before)"] = ([*memoryd, *select], False, old)
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
    if done.returncode != 0 or "running in-process" in done.stderr:
        raise RuntimeError(f"{argv} failed or fell back:\n{done.stderr[-2000:]}")
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
        with running_daemon([root]) as d:
            env = {**daemon_env(d.home, "WARNING"), "MEMORYD_SOCKET": str(d.socket)}
            # Installed code has its bytecode cached; without this the warm-up
            # could not cache it, and every run would compile memoryd again.
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            cmds = commands(d, env, args.before)
            times: dict[str, list[float]] = {name: [] for name in cmds}
            cpus: dict[str, list[float]] = {name: [] for name in cmds}
            for argv, needs_event, cmd_env in cmds.values():  # warm-up: page cache, .pyc
                run_once(argv, hook_event() if needs_event else "", cmd_env)
            for _ in range(args.runs):
                for name, (argv, needs_event, cmd_env) in cmds.items():
                    event = hook_event() if needs_event else ""
                    wall, cpu = run_once(argv, event, cmd_env)
                    times[name].append(wall)
                    cpus[name].append(cpu)
            heavy = heavy_imports(cmds["hook claude-code"][0], env)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    bare = statistics.median(times["python -c pass"])
    bare_cpu = statistics.median(cpus["python -c pass"])
    rows: list[dict[str, Any]] = []
    for name, values in times.items():
        median = statistics.median(values)
        rows.append(
            {
                "command": name,
                "median_ms": round(median, 1),
                "p10_ms": round(percentile(values, 0.1), 1),
                "p90_ms": round(percentile(values, 0.9), 1),
                "ratio": round(median / bare, 2),
                "cpu_ms": round(statistics.median(cpus[name]), 1),
                "cpu_ratio": round(statistics.median(cpus[name]) / bare_cpu, 2),
            }
        )
    loadavg = Path("/proc/loadavg").read_text().split()[:3]
    if args.json:
        print(json.dumps({"rows": rows, "hook_heavy_imports": heavy, "loadavg": loadavg}))
    else:
        print(f"{args.runs} runs each, round-robin; load average {' '.join(loadavg)}")
        print(
            f"{'command':<30} {'median ms':>9} {'p10-p90 ms':>14} {'x bare':>7} "
            f"{'cpu ms':>7} {'x bare':>7}  target"
        )
        for row in rows:
            client = row["command"] in ("hook claude-code", "select", "status")
            verdict = ("ok" if row["ratio"] <= TARGET_RATIO else "MISSED") if client else ""
            spread = f"{row['p10_ms']}-{row['p90_ms']}"
            print(
                f"{row['command']:<30} {row['median_ms']:>9} {spread:>14} {row['ratio']:>6}x "
                f"{row['cpu_ms']:>7} {row['cpu_ratio']:>6}x  {verdict}"
            )
        print(f"heavy modules imported by the hook: {', '.join(heavy) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
