"""The first hour: what a newcomer runs into, said where it belongs (stderr, an exit status)."""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
from daemon_fixtures import DaemonProc, write_memory

from memoryd.cli import build_parser, main


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


class StartingDaemon:
    """A socket that answers like a daemon building its first index.

    ``status`` says ``starting``; any other request is held until a ``status``
    has come in on another connection (the CLI's probe), or 10 s have passed.
    """

    def __init__(self, path: Path) -> None:
        self.probed = threading.Event()
        self.listener = socket.socket(socket.AF_UNIX)
        self.listener.bind(str(path))
        self.listener.listen()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as lines:
            for line in lines:
                request = json.loads(line)
                if request["method"] == "status":
                    result: dict[str, Any] = {
                        "state": "starting",
                        "indexing": {"phase": "indexing", "done": 1200, "total": 5000},
                    }
                    self.probed.set()
                else:
                    self.probed.wait(10)
                    result = {"selected": [], "run_id": "r", "fallback": None}
                reply = {"id": request["id"], "result": result}
                conn.sendall(json.dumps(reply).encode() + b"\n")


def test_a_command_held_by_a_first_index_says_so(
    tmp_path: Path, memdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_memory(memdir / "feedback_a.md", "a memory")
    run_dir = Path(tempfile.mkdtemp(prefix="md-", dir="/tmp"))
    try:
        fake = StartingDaemon(run_dir / "d.sock")
        code = main(
            ["select", "anything", "--dir", str(memdir), "--socket", str(run_dir / "d.sock")]
        )
        fake.listener.close()
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    out, err = capsys.readouterr()
    assert (code, out) == (0, "(no memory clearly helps with this query)\n")
    assert fake.probed.is_set()
    assert err == (
        "memoryd: waiting for the daemon to finish its first index "
        "(1,200 of 5,000 files so far); this answers after it\n"
    )


def test_the_mcp_extra_is_described_as_what_it_is() -> None:
    """The extra installs nothing, so no install text may say it adds the MCP server."""
    import tomllib  # noqa: PLC0415

    root = Path(__file__).resolve().parents[1]
    with (root / "pyproject.toml").open("rb") as fh:
        assert tomllib.load(fh)["project"]["optional-dependencies"]["mcp"] == []
    for doc in ("README.md", "docs/package.md"):
        text = " ".join((root / doc).read_text(encoding="utf-8").split())
        assert "extra adds" not in text, doc
        assert "The `mcp` extra is empty" in text, doc


def test_the_readme_config_example_is_a_valid_config(tmp_path: Path) -> None:
    from memoryd import config  # noqa: PLC0415

    root = Path(__file__).resolve().parents[1]
    text = (root / "README.md").read_text(encoding="utf-8").split("### Configuration", 1)[1]
    example = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "config.yaml"
    path.write_text(example.replace("sk-ant-…", "sk-ant-example"), encoding="utf-8")
    assert config.load(path).telemetry_keep_runs == 100_000
