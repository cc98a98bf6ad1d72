"""Tests that forget to isolate themselves: the isolation proof runs them, ``make test`` does not.

Each reaches memoryd the way a careless test would (the CLI in this process,
a subprocess without its own environment, the hook, a client on the default
socket), with nothing pointing anywhere private. Only
``tests/test_hardening_test_isolation.py`` runs this file, by name (it does
not match ``test_*.py``), and checks that none of it reached the daemon of
the user who started the run.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path

from daemon_fixtures import write_memory

from memoryd import cli, paths
from memoryd.errors import MemorydError
from memoryd.ipc.client import Client


def folder_in(tmp_path: Path) -> Path:
    return write_memory(tmp_path / "memory" / "reference_deploy.md", "How we deploy").parent


def test_the_cli_in_this_process(tmp_path: Path) -> None:
    folder = folder_in(tmp_path)
    cli.main(["list", str(folder)])
    cli.main(["select", "how do we deploy", "--dir", str(folder)])
    cli.main(["save", "--dir", str(folder), "--project", "careless", "--summary", "did it"])


def test_a_subprocess_and_the_hook(tmp_path: Path) -> None:
    folder = folder_in(tmp_path)
    subprocess.run([sys.executable, "-m", "memoryd", "watch", str(folder)], check=False)
    event = {"hook_event_name": "UserPromptSubmit", "prompt": "deploy?", "cwd": str(tmp_path)}
    subprocess.run(
        [sys.executable, "-m", "memoryd", "hook", "claude-code"],
        input=json.dumps(event),
        text=True,
        check=False,
    )


def test_a_client_on_the_default_socket(tmp_path: Path) -> None:
    folder = folder_in(tmp_path)
    with contextlib.suppress(MemorydError), Client(paths.default_socket(), timeout=5) as c:
        c.call("watch", {"dir": str(folder)})
