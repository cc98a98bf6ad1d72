"""``--db PATH`` is honoured: the command is answered from that index or not at all.

A daemon answers from its own index, so a command sent to a daemon of another
index would quietly ignore ``--db``. These tests run the CLI beside a real
daemon on a temp socket (found through ``MEMORYD_SOCKET``, as a user's shell
finds it): ``--db`` of another index is refused before anything is asked, and
with a socket of its own it starts a daemon of that index, which answers
every command while the first daemon never sees them.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from daemon_fixtures import DaemonProc, write_memory

from memoryd.cli import main
from memoryd.cli.connect import state_for

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
    own = ["--db", str(db), "--socket", str(db.parent / "memoryd.sock")]
    assert main(["list", str(folder), *own, "--json"]) == 0
    listed, err = capsys.readouterr()
    assert [f["filename"] for f in json.loads(listed)["files"]] == ["feedback_ledger.md"]
    assert "started one (pid " in err and f"log {state_for(db) / 'daemon.log'}" in err
    assert indexed(db) == {"feedback_ledger.md"}

    asked = ["select", "how do invoices reach the ledger?", "--dir", str(folder)]
    assert main([*asked, "--ranker", "local", *own]) == 0
    capsys.readouterr()
    assert main(["stats", *own, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"] == 1

    saved = ["save", "--dir", str(folder), "--project", PROJECT, "--summary", "s", "--json"]
    assert main([*saved, "--decision", "kept", *own]) == 0
    path = Path(json.loads(capsys.readouterr().out)["path"])
    assert path.is_file() and path.name in indexed(db)

    loaded = ["load-last", "--dir", str(folder), "--project", PROJECT, "--json"]
    assert main([*loaded, *own]) == 0
    assert json.loads(capsys.readouterr().out)["path"] == str(path)

    # The first daemon answered none of them: the folder never became one of its roots.
    assert str(folder.resolve()) not in daemon_roots(daemon)
    assert main(["list", str(folder), "--json"]) == 0  # without --db: the daemon
    capsys.readouterr()
    assert str(folder.resolve()) in daemon_roots(daemon)


@pytest.mark.parametrize("flag", [[], ["--require-daemon"]])
def test_db_of_another_index_than_the_running_daemons_is_refused(
    beside: tuple[DaemonProc, Path, Path], capsys: pytest.CaptureFixture[str], flag: list[str]
) -> None:
    daemon, folder, db = beside
    assert main(["list", str(folder), "--db", str(db), *flag]) == 1
    err = capsys.readouterr().err
    assert f"the daemon on {daemon.socket} serves {daemon.db}, not --db {db}" in err
    assert not db.exists()
    assert str(folder.resolve()) not in daemon_roots(daemon)


def test_a_db_in_a_shared_folder_leaves_that_folder_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The started daemon's pidfile, lock and log live in a state folder of its own:
    ``--db /tmp/x.db`` must neither tighten ``/tmp`` nor drop files into it."""
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "someone_elses.txt").write_text("not memoryd's\n")
    shared.chmod(0o755)
    folder = tmp_path / "memory"
    write_memory(folder / "feedback_ledger.md", "invoices reach the ledger nightly")
    db = shared / "x.db"
    own = ["--db", str(db), "--socket", str(tmp_path / "own.sock")]
    assert main(["list", str(folder), *own, "--json"]) == 0
    capsys.readouterr()
    assert shared.stat().st_mode & 0o777 == 0o755
    assert {p.name for p in shared.iterdir()} <= {
        "someone_elses.txt",
        "x.db",
        "x.db-wal",
        "x.db-shm",
    }
    assert (state_for(db) / "daemon.log").exists()
