"""The hook and the daemon-backed commands load no heavy module when a daemon answers.

Claude Code starts ``memoryd hook claude-code`` on every prompt, so what that
process imports is paid on every prompt. Each case runs a real command against
a real daemon under ``python -X importtime`` and reads the modules it loaded.
Speed itself is measured in bench/startup_bench.py, not asserted here.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from daemon_fixtures import DaemonProc, write_memory

from memoryd import cli

THIRD_PARTY = (
    "sqlite_utils",
    "sqlite3",
    "yaml",
    "structlog",
    "anthropic",
    "apscheduler",
    "watchdog",
)
# memoryd's own modules that pull those in.
# The session package itself is light: the hook reads a session's sections.
OWN = (
    "memoryd.indexer",
    "memoryd.select",
    "memoryd.sessions.brief",
    "memoryd.sessions.format",
    "memoryd.sessions.files",
    "memoryd.report",
)
IMPORT_LINE = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|\s+(\S+)")


@pytest.fixture
def served(make_daemon: Callable[..., DaemonProc], tmp_path: Path) -> DaemonProc:
    root = tmp_path / "memory"
    write_memory(root / "feedback_ledger.md", "Invoices post to the ledger service nightly")
    write_memory(root / "2026-11-30-10-00-demo.md", "Session: ledger wiring", mtype="project")
    d = make_daemon(roots=[root], start=False)
    d.env["MEMORYD_LOG_LEVEL"] = "WARNING"  # the level a hook normally runs at
    return d.start()


def imported(d: DaemonProc, argv: list[str], stdin: str = "") -> tuple[set[str], str]:
    """Run ``python -X importtime -m memoryd ARGV``; the modules it loaded, and stdout."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "memoryd", *argv],
        input=stdin,
        env={**d.env, "MEMORYD_SOCKET": str(d.socket)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    modules = {m.group(1) for m in map(IMPORT_LINE.match, done.stderr.splitlines()) if m}
    assert done.returncode == 0, done.stderr[-2000:]
    assert "started one" not in done.stderr  # the daemon answered
    assert "memoryd.ipc.client" in modules  # the parse worked and the client path ran
    return modules, done.stdout


LIGHT = ("memoryd.indexer", "memoryd.indexer.secrets")
"""Allowed on the client path: the lazy package and the credential scanner (pure ``re``)."""


def heavy_in(modules: set[str]) -> list[str]:
    return sorted(
        m
        for m in modules
        if m.split(".")[0] in THIRD_PARTY or (m.startswith(OWN) and m not in LIGHT)
    )


def test_hook_prompt_path_imports_nothing_heavy(served: DaemonProc) -> None:
    event = {
        "hook_event_name": "UserPromptSubmit",
        "session_id": "startup-test",
        "cwd": str(served.home),
        "prompt": "how do invoices reach the ledger?",
    }
    argv = ["hook", "claude-code", "--dir", str(served.roots[0])]
    modules, out = imported(served, argv, json.dumps(event))
    assert "feedback_ledger.md" in out  # the daemon answered and the hook injected it
    assert heavy_in(modules) == []
    # The hook sends its params itself: the declarations (and dataclasses) stay unloaded.
    assert "memoryd.methods" not in modules and "dataclasses" not in modules


def test_hook_session_start_path_imports_nothing_heavy(served: DaemonProc) -> None:
    directory = str(served.roots[0])
    served.call("save", {"dir": directory, "project": "demo", "session_summary": "Wired it."})
    event = {"hook_event_name": "SessionStart", "session_id": "s2", "cwd": "/work/demo"}
    modules, out = imported(served, ["hook", "claude-code", "--dir", directory], json.dumps(event))
    assert "Session summary: Wired it." in out
    assert heavy_in(modules) == []


@pytest.mark.parametrize(
    "argv",
    [
        ["select", "how do invoices reach the ledger?", "--require-daemon"],
        ["status"],
        ["list"],
        ["load-last", "--project", "demo"],
        ["context", "continue the ledger wiring"],
        ["stats", "--json"],
        ["save", "--project", "demo", "--summary", "Checked start-up imports."],
        ["report", "--json"],
    ],
    ids=lambda argv: argv[0],
)
def test_daemon_backed_commands_import_nothing_heavy(served: DaemonProc, argv: list[str]) -> None:
    directory = str(served.roots[0])
    if argv[0] == "list":
        argv = [*argv, directory]
    elif argv[0] in ("select", "load-last", "context", "save", "report"):
        argv = [*argv, "--dir", directory]
    modules, out = imported(served, argv)
    assert out.strip()
    assert heavy_in(modules) == []


def subcommands(parser: argparse.ArgumentParser) -> set[str]:
    [action] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return set(action.choices)


def test_the_command_table_matches_what_the_modules_register() -> None:
    """``memoryd.cli`` builds only the module a command needs, found through COMMANDS."""
    assert subcommands(cli.build_parser()) == set(cli.COMMANDS)
    for command in cli.COMMANDS:
        assert command in subcommands(cli.build_parser(command))
