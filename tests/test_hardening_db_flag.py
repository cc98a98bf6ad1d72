"""``--db PATH`` is honoured with a daemon running: the command runs in-process on that index.

A daemon answers from its own index, so a command that asked it would quietly
ignore ``--db``. These tests run the CLI beside a real daemon on a temp socket
(found through ``MEMORYD_SOCKET``, as a user's shell finds it) and check that
the other index is the one read and written, and that the daemon never saw
the request; ``--db`` beside a flag that asks for the daemon is refused.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from daemon_fixtures import DaemonProc, write_memory

from memoryd.cli import main

PROJECT = "dbflag"


@pytest.fixture
def beside(
    make_daemon: Callable[..., DaemonProc], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> tuple[DaemonProc, Path, Path]:
    """A running daemon the CLI finds, a folder it does not watch, and another index's path."""
    daemon = make_daemon()
    for key, value in daemon.env.items():
        if key.startswith(("HOME", "XDG_", "CLAUDE")):
            monkeypatch.setenv(key, value)
    monkeypatch.setenv("MEMORYD_SOCKET", str(daemon.socket))
    monkeypatch.delenv("MEMORYD_DB", raising=False)
    folder = tmp_path / "elsewhere"
    write_memory(folder / "feedback_ledger.md", "invoices reach the ledger nightly")
    return daemon, folder, tmp_path / "other" / "index.db"


def indexed(db: Path) -> set[str]:
    with sqlite3.connect(db) as conn:
        return {row[0] for row in conn.execute("SELECT filename FROM files")}


def daemon_roots(daemon: DaemonProc) -> set[str]:
    return {r["path"] for r in daemon.call("status")["roots"]}


def test_commands_given_db_use_that_index_not_the_daemons(
    beside: tuple[DaemonProc, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    daemon, folder, db = beside
    db.parent.mkdir()
    assert main(["list", str(folder), "--db", str(db), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [f["filename"] for f in listed["files"]] == ["feedback_ledger.md"]
    assert indexed(db) == {"feedback_ledger.md"}

    asked = ["select", "how do invoices reach the ledger?", "--dir", str(folder)]
    assert main([*asked, "--ranker", "local", "--db", str(db)]) == 0
    capsys.readouterr()
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM selector_runs").fetchone()[0] == 1

    saved = ["save", "--dir", str(folder), "--project", PROJECT, "--summary", "s", "--json"]
    assert main([*saved, "--decision", "kept", "--db", str(db)]) == 0
    path = Path(json.loads(capsys.readouterr().out)["path"])
    assert path.is_file() and path.name in indexed(db)

    loaded = ["load-last", "--dir", str(folder), "--project", PROJECT, "--json"]
    assert main([*loaded, "--db", str(db)]) == 0
    assert json.loads(capsys.readouterr().out)["path"] == str(path)

    # The daemon answered none of them: the folder never became one of its roots.
    assert str(folder.resolve()) not in daemon_roots(daemon)
    assert main(["list", str(folder), "--json"]) == 0  # without --db: the daemon
    capsys.readouterr()
    assert str(folder.resolve()) in daemon_roots(daemon)


@pytest.mark.parametrize("flag", [["--require-daemon"], ["--socket", "SOCKET"]])
def test_db_beside_a_flag_that_asks_for_the_daemon_is_refused(
    beside: tuple[DaemonProc, Path, Path], capsys: pytest.CaptureFixture[str], flag: list[str]
) -> None:
    daemon, folder, db = beside
    given = [str(daemon.socket) if word == "SOCKET" else word for word in flag]
    with pytest.raises(SystemExit) as exited:
        main(["list", str(folder), "--db", str(db), *given])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"--db runs the command in-process on {db}" in err and flag[0] in err
    assert not db.exists()
