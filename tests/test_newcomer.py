"""The README's tour, run as a newcomer would, against a real daemon started as ``make serve`` does.

The tour in README.md is a console transcript: ``$ command`` lines and the
lines each prints, with ``…`` for text that differs between machines (a line
that is only ``…`` stands for any number of lines left out). Every shown line
must appear, in order; lines shown next to each other must be next to each
other in the output. So the README cannot drift from what memoryd prints.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from daemon_fixtures import DaemonProc, daemon_env

REPO = Path(__file__).resolve().parents[1]
GAP = "…"

# What the README's prose says drops out, checked on top of the shown lines.
ABSENT = {"--tool pytest": "reference_pytest_usage.md"}


def tour() -> list[tuple[str, list[str]]]:
    """(command, expected lines) pairs from the README's tour transcript."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("### A tour, from a second terminal", 1)[1]
    block = section.split("```console\n", 1)[1].split("```", 1)[0]
    steps: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    return steps


def pattern(line: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in line.split(GAP)), re.DOTALL)


def matches(expected: list[str], output: list[str]) -> bool:
    """True when ``output`` shows every expected line in order, gaps only where ``…`` is."""

    def walk(e: int, o: int, gap: bool) -> bool:
        if e == len(expected):
            return gap or o == len(output)
        if expected[e] == GAP:
            return walk(e + 1, o, True)
        wanted = pattern(expected[e])
        candidates = range(o, len(output)) if gap else range(o, min(o + 1, len(output)))
        return any(wanted.fullmatch(output[i]) and walk(e + 1, i + 1, False) for i in candidates)

    return walk(0, 0, False)


def test_the_matcher_is_strict_about_order_and_gaps() -> None:
    assert matches(["a", GAP, "c…"], ["a", "b", "cde"])
    assert not matches(["a", "c"], ["a", "b", "c"])  # shown adjacent, printed apart
    assert not matches(["c", GAP, "a"], ["a", "b", "c"])
    assert not matches(["a"], ["a", "b"])  # an unshown line at the end needs a "…"
    assert matches(["…/x: 1 files"], ["/tmp/q/x: 1 files"])


def newcomer(tmp_path: Path, python: str) -> tuple[Path, dict[str, str]]:
    """A fresh HOME and a checkout-like folder holding the sample memories.

    ``python`` is the interpreter whose ``bin/`` comes first on PATH: this
    virtualenv's, or a clean one a built wheel was installed into
    (tests/test_wheel_install.py).
    """
    home = tmp_path / "home"
    home.mkdir()
    checkout = tmp_path / "checkout"
    shutil.copytree(REPO / "examples", checkout / "examples")
    env = daemon_env(home)
    env.pop("MEMORYD_LOG_LEVEL")
    env["PATH"] = f"{os.path.dirname(python)}:{env.get('PATH', '')}"
    return checkout, env


def test_readme_tour_prints_what_the_readme_shows(tmp_path: Path) -> None:
    run_tour(tmp_path, sys.executable)


def run_tour(tmp_path: Path, python: str) -> None:
    """Start the daemon as ``make serve`` does, with ``python``, and walk the README's tour."""
    checkout, env = newcomer(tmp_path, python)
    home = Path(env["HOME"])
    daemon = DaemonProc(
        home=home,
        roots=[checkout / "examples" / "memory"],
        socket=home / "run" / "memoryd" / "memoryd.sock",
        state_dir=home / "state" / "memoryd",
        env=env,
    )
    serve = [python, "-m", "memoryd", "serve", "--default-roots", "--root"]
    daemon.start(argv=[*serve, "examples/memory"], cwd=checkout)
    try:
        steps = tour()
        assert len(steps) >= 10
        for command, expected in steps:
            if command.startswith(". "):
                continue  # activating the venv: PATH already has it
            deadline = time.monotonic() + 5
            while True:
                proc = subprocess.run(
                    ["bash", "-c", command],
                    cwd=checkout,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
                # A step shown failing shows its error line: stderr, and exit 1.
                failing = any(line.startswith("memoryd: error: ") for line in expected)
                assert proc.returncode == (1 if failing else 0), (command, proc.stderr)
                lines = (proc.stderr if failing else proc.stdout).splitlines()
                # The watcher needs a moment to see `touch`; nothing else is retried.
                if matches(expected, lines) or "touch" not in command:
                    break
                if time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            shown = "\n".join(expected)
            assert matches(expected, lines), (
                f"$ {command}\nREADME:\n{shown}\nprinted:\n{proc.stdout}"
            )
            for flag, absent in ABSENT.items():
                if flag in command:
                    assert absent not in proc.stdout, command
        raw_protocol_example_answers(checkout, env)
        python_example_answers(checkout, env, python)
    finally:
        daemon.stop()
    assert "Traceback" not in daemon.log()


def raw_protocol_example_answers(checkout: Path, env: dict[str, str]) -> None:
    """The README's raw-protocol example gets an answer from a shell with nothing extra.

    It must not need socat (not installed by default) nor build the socket's
    path from ``$XDG_RUNTIME_DIR`` (unset under su, cron, many CI shells):
    it asks ``memoryd status --json`` where the socket is.
    """
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("The raw protocol is", 1)[1]
    example = section.split("```sh\n", 1)[1].split("```", 1)[0]
    assert "socat" not in example and "XDG_RUNTIME_DIR" not in example
    proc = subprocess.run(
        ["bash", "-c", example], cwd=checkout, env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    reply = json.loads(proc.stdout)
    assert reply["id"] == 1 and reply["result"]["state"] == "ready"


def python_example_answers(checkout: Path, env: dict[str, str], python: str) -> None:
    """The README's Python example runs as written with ``python`` (the wheel's, in the wheel
    tour), from the tour's folder, and prints the memory it selects."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    example = text.split("### Python", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    proc = subprocess.run(
        [python, "-c", example], cwd=checkout, env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert f"{checkout}/examples/memory/feedback_pytest_xdist_gotcha.md " in proc.stdout
