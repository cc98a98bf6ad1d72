"""The first hour: what a newcomer runs into, said where it belongs (stderr, an exit status)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from daemon_fixtures import DaemonProc, write_memory

from memoryd.cli import build_parser


def cli(d: DaemonProc, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memoryd", *argv, "--socket", str(d.socket)],
        env=d.env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_watch_refuses_a_folder_with_no_memories(daemon: DaemonProc, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    done = cli(daemon, "watch", str(empty))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"memoryd: error: 'dir': not watched: no memories in {empty} (0 files)\n"
    project = tmp_path / "project"
    write_memory(project / "memory" / "feedback_a.md", "a memory")
    done = cli(daemon, "watch", str(project))
    assert done.returncode == 1
    assert f"did you mean {project / 'memory'}?" in done.stderr
    roots = [r["path"] for r in daemon.call("status")["roots"]]
    assert str(empty) not in roots and str(project) not in roots
    done = cli(daemon, "watch", str(project / "memory"))
    assert done.returncode == 0, done.stderr


def _parsers(
    parser: argparse.ArgumentParser, name: str
) -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(name, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, child in action.choices.items():
                found += _parsers(child, f"{name} {sub}")
    return found


def test_every_flag_and_argument_has_help() -> None:
    missing = [
        f"{name} {'/'.join(action.option_strings) or action.dest}"
        for name, parser in _parsers(build_parser(), "memoryd")
        for action in parser._actions
        if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction))
        and not action.help
    ]
    assert missing == []
