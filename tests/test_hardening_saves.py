"""Concurrent saves of one session: every acknowledged decision is in the file afterwards.

Saves merge into the session file they replace, so two saves at once used to
lose what the first one wrote. These tests save concurrently through a real
daemon (its request threads) and from a second process saving in-process,
then read the file: nothing acknowledged may be missing.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from daemon_fixtures import DaemonProc

from memoryd.bounded_read import MAX_READ_BYTES
from memoryd.errors import Busy, InvalidParams, NotRegularFile
from memoryd.methods import Save
from memoryd.params import decode
from memoryd.sessions import files as session_io
from memoryd.sessions import writes

PROJECT = "race"
SESSION = "2026-01-02-10-00"

SAVER = """
import sys
from memoryd.sessions import files
from memoryd.methods import Save
from memoryd.params import decode
folder, count, tag = sys.argv[1], int(sys.argv[2]), sys.argv[3]
for n in range(count):
    params = {"dir": folder, "project": "race", "session": "2026-01-02-10-00",
              "session_summary": "racing", "key_decisions": [f"{tag} {n}"]}
    files.save(files.save_request(decode(Save, params)))
print("done", flush=True)
"""


def params(folder: Path, decision: str) -> dict[str, object]:
    return {
        "dir": str(folder),
        "project": PROJECT,
        "session": SESSION,
        "session_summary": "racing",
        "key_decisions": [decision],
    }


def save_from_threads(daemon: DaemonProc, folder: Path, clients: int, saves: int) -> list[str]:
    """``clients`` threads, one connection each, ``saves`` saves each; the acknowledged ones."""
    acknowledged: list[str] = []
    failures: list[BaseException] = []
    start = threading.Barrier(clients)

    def client(k: int) -> None:
        try:
            with daemon.client(timeout=60) as c:
                start.wait()
                for n in range(saves):
                    decision = f"thread {k} save {n}"
                    c.call("save", params(folder, decision))
                    acknowledged.append(decision)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    return acknowledged


def session_text(folder: Path) -> str:
    return (folder / f"{SESSION}-{PROJECT}.md").read_text(encoding="utf-8")


def missing(text: str, decisions: list[str]) -> list[str]:
    lines = {line.strip().removeprefix("- ") for line in text.splitlines()}
    return [d for d in decisions if d not in lines]


def test_concurrent_daemon_saves_to_one_session_keep_every_decision(
    make_daemon: Callable[..., DaemonProc],
) -> None:
    daemon = make_daemon()
    folder = daemon.roots[0]
    acknowledged = save_from_threads(daemon, folder, clients=8, saves=15)
    assert len(acknowledged) == 120
    assert missing(session_text(folder), acknowledged) == []
    last = daemon.call("load_last", {"dir": str(folder), "project": PROJECT})
    assert last["found"] and missing(last["content"], acknowledged) == []


def test_an_in_process_saver_and_the_daemon_take_turns(
    make_daemon: Callable[..., DaemonProc],
) -> None:
    """Two processes write the file: the daemon (for four clients) and a CLI-like saver."""
    daemon = make_daemon()
    folder = daemon.roots[0]
    saver = subprocess.Popen(
        [sys.executable, "-c", SAVER, str(folder), "40", "process"],
        env=daemon.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    acknowledged = save_from_threads(daemon, folder, clients=4, saves=15)
    out, err = saver.communicate(timeout=120)
    assert saver.returncode == 0 and out.strip() == "done", err
    acknowledged += [f"process {n}" for n in range(40)]
    assert missing(session_text(folder), acknowledged) == []


def test_the_lock_file_is_never_followed_and_stays(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    outside = tmp_path / "outside"
    outside.write_text("keep me\n")
    lock = folder / writes.LOCK_NAME
    lock.symlink_to(outside)
    request = session_io.save_request(decode(Save, params(folder, "first")))
    with pytest.raises(NotRegularFile) as refused:
        session_io.save(request)
    message = refused.value.message
    assert "symbolic link" in message and "nothing was written" in message
    assert outside.read_text() == "keep me\n" and lock.is_symlink()
    assert not (folder / f"{SESSION}-{PROJECT}.md").exists()
    lock.unlink()
    folder.chmod(0o755)  # others may read the folder, not write it: they may not hold the lock
    session_io.save(request)
    assert lock.is_file() and not lock.is_symlink()  # left in place for the next save
    assert lock.stat().st_mode & 0o777 == 0o600
    folder.chmod(0o775)  # a folder its group shares: the group's saves take the same lock
    session_io.save(request)
    assert lock.stat().st_mode & 0o777 == 0o660


def test_a_lock_held_elsewhere_is_busy_and_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    session_io.save(session_io.save_request(decode(Save, params(folder, "first"))))
    before = session_text(folder)
    monkeypatch.setattr(writes, "WAIT_S", 0.2)
    fd = os.open(folder / writes.LOCK_NAME, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another holder: a second open file description
        with pytest.raises(Busy) as busy:
            session_io.save(session_io.save_request(decode(Save, params(folder, "second"))))
    finally:
        os.close(fd)
    assert busy.value.code == "busy" and "nothing was written" in busy.value.message
    assert session_text(folder) == before
    session_io.save(session_io.save_request(decode(Save, params(folder, "second"))))
    assert missing(session_text(folder), ["first", "second"]) == []


def test_a_save_that_would_outgrow_the_read_cap_is_refused_whole(tmp_path: Path) -> None:
    """The merge reads the file it replaces; past the read cap it would drop the file's end."""
    folder = tmp_path / "memory"
    folder.mkdir()

    def save(decision: str, **more: object) -> object:
        return session_io.save(
            session_io.save_request(decode(Save, {**params(folder, decision), **more}))
        )

    first = "first " + "a" * 700_000
    save(first)
    before = session_text(folder)
    big = "second " + "b" * 500_000
    with pytest.raises(InvalidParams) as refused:
        save(big)
    assert "nothing was written" in refused.value.message
    assert session_text(folder) == before  # an acknowledged save is never cut short
    save("third")
    assert missing(session_text(folder), [first, "third"]) == []

    # A file already over the cap (written by hand): merging is refused, replacing is not.
    path = folder / f"{SESSION}-{PROJECT}.md"
    path.write_text(before + "- " + "c" * MAX_READ_BYTES + "\n", encoding="utf-8")
    with pytest.raises(InvalidParams):
        save("fourth")
    save("fifth", replace=True)
    assert missing(session_text(folder), ["fifth"]) == [] and first not in session_text(folder)
