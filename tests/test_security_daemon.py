"""Hostile requests from our own uid, against a real daemon: answered as data, nothing leaks."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from daemon_fixtures import DaemonProc, raw_exchange, wait_until, write_memory

FAKE = "FAKE" * 9
GH_TOKEN = f"ghp_{FAKE}"
AWS_ID = "AKIAFAKEFAKEFAKEFAKE"


def test_hostile_ids_nesting_and_nul_are_request_errors_never_internal(
    daemon: DaemonProc,
) -> None:
    nul_dir = json.dumps({"id": 3, "method": "list", "params": {"dir": "/tmp/a\x00b"}})
    nul_save = json.dumps(
        {"id": 4, "method": "save", "params": {"dir": "/tmp\x00", "project": "p"}}
    )
    answers = raw_exchange(
        daemon,
        [
            b'{"id":' + b"9" * 5000 + b',"method":"status"}',
            b"[" * 100_000 + b"]" * 100_000,
            b'{"id":2,"method":"status","params":' + b'{"a":' * 50_000 + b"1" + b"}" * 50_001,
            nul_dir.encode(),
            nul_save.encode(),
            b'{"id":5,"method":"status"}',
        ],
    )
    codes = [a["error"]["code"] if "error" in a else "ok" for a in answers]  # type: ignore[index]
    assert codes == [
        "invalid_request",
        "invalid_request",
        "invalid_request",
        "invalid_params",
        "invalid_params",
        "ok",
    ]
    assert "nested too deeply" in answers[1]["error"]["message"]  # type: ignore[index]
    assert "NUL byte" in answers[3]["error"]["message"]  # type: ignore[index]
    assert "internal" not in daemon.log()


def test_a_refused_save_writes_nothing(daemon: DaemonProc) -> None:
    before = set(daemon.home.iterdir())
    answer = raw_exchange(
        daemon,
        [
            json.dumps(
                {
                    "id": 1,
                    "method": "save",
                    "params": {"dir": str(daemon.home), "project": "shop", "session_summary": "x"},
                }
            ).encode()
        ],
    )[0]
    assert answer["error"]["code"] == "invalid_params"  # type: ignore[index]
    assert "too broad" in answer["error"]["message"]  # type: ignore[index]
    assert set(daemon.home.iterdir()) == before


def test_secrets_in_a_saved_session_never_come_back_out(daemon: DaemonProc) -> None:
    root = daemon.roots[0]
    with daemon.client() as c:
        c.save(
            str(root),
            "uploader",
            session="2025-05-01-10-00",
            session_summary=f"Uploader auth: switched to the bot token {GH_TOKEN}.",
            key_decisions=[
                f"Decided to sign uploads with the key id {AWS_ID} instead of the old user",
                f"Chose the bot token {GH_TOKEN} rather than a personal token",
            ],
            active_state="Open question: is the uploader retry budget enough?",
        )
        brief = c.context("continue the uploader auth work", str(root), project="uploader")
        last = c.load_last(str(root), "uploader")
        revealed = c.load_last(str(root), "uploader", reveal_secrets=True)
        listing = c.list(str(root))
    assert brief["status"] == "found"
    shown = json.dumps([brief, last, listing])
    assert GH_TOKEN not in shown and AWS_ID not in shown
    assert "[redacted GitHub token]" in brief["text"] + last["content"]
    assert GH_TOKEN in revealed["content"]  # asked for explicitly: the file as it is
    daemon.stop()
    for suffix in ("", "-wal"):
        db_file = Path(f"{daemon.db}{suffix}")
        if db_file.exists():
            assert GH_TOKEN.encode() not in db_file.read_bytes()
    with sqlite3.connect(daemon.db) as conn:
        assert GH_TOKEN not in "\n".join(conn.iterdump())
    assert GH_TOKEN not in daemon.log() and AWS_ID not in daemon.log()


def test_a_clean_stop_leaves_no_wal(make_daemon: Callable[..., DaemonProc]) -> None:
    d = make_daemon()
    root = d.roots[0]
    for i in range(400):
        write_memory(root / f"feedback_{i}.md", f"memory number {i} " + "words " * 50)
    wait_until(lambda: len(d.call("list", {"dir": str(root)})["files"]) == 400, 60, "indexed")
    with d.client() as c:  # a reader connection that stays open until the stop
        c.status()
        assert d.stop() == 0
    wal = Path(f"{d.db}-wal")
    assert not wal.exists() or wal.stat().st_size == 0


@pytest.mark.parametrize("value", ['"false"', "'no'", "0"])
def test_a_quoted_boolean_in_the_config_is_an_error_naming_the_key(
    make_daemon: Callable[..., DaemonProc], value: str
) -> None:
    d = make_daemon(start=False)
    config = d.home / "config" / "memoryd" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(f"telemetry:\n  log_queries: {value}\n")
    out = subprocess.run(d.argv(), env=d.env, capture_output=True, text=True, timeout=30)
    assert out.returncode != 0
    assert "telemetry.log_queries" in out.stderr and "true or false" in out.stderr
    assert "Traceback" not in out.stderr


def test_select_with_allow_secrets_answers_the_redacted_description(daemon: DaemonProc) -> None:
    root = daemon.roots[0]
    write_memory(
        root / "reference_ci_bot.md",
        f"The CI bot deploys with token {GH_TOKEN}",
        mtype="reference",
        body=f"export GITHUB_TOKEN={GH_TOKEN}",
    )
    wait_until(lambda: len(daemon.call("list", {"dir": str(root)})["files"]) == 1, 10, "indexed")
    with daemon.client() as c:
        hidden = c.select("which token does the CI bot deploy with", str(root), ranker="local")
        shown = c.call(
            "select",
            {
                "query": "which token does the CI bot deploy with",
                "dir": str(root),
                "ranker": "local",
                "allow_secrets": True,
            },
        )
    assert hidden["selected"] == []
    assert [s["filename"] for s in shown["selected"]] == ["reference_ci_bot.md"]
    assert GH_TOKEN not in json.dumps(shown)
    assert "[redacted GitHub token]" in shown["selected"][0]["description"]
