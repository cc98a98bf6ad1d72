"""Credentials: a linear scan the writer cannot choke on, and redaction on every way out."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memoryd.indexer.secrets import find_secrets, redact, redact_value
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer

FAKE = "FAKE" * 9
GH_TOKEN = f"ghp_{FAKE}"
AWS_ID = "AKIAFAKEFAKEFAKEFAKE"


@pytest.mark.parametrize(
    "line",
    [
        "sk-" * 333_000 + "://",  # scheme-like runs: each start used to rescan the rest
        "a" * 999_990 + ":// x",
        "x://" + "u" * 499_990 + ":" + "p" * 499_990,
    ],
    ids=["sk-runs", "long-scheme", "uri-without-at"],
)
@pytest.mark.timeout(30)  # a hang guard: backtracking over 1 MB takes hours, not seconds
def test_a_one_megabyte_single_line_file_indexes_without_backtracking(
    store: IndexStore, memdir: Path, line: str
) -> None:
    path = memdir / "feedback_huge_line.md"
    path.write_text(f"---\ndescription: one very long line\n---\n{line}\n", encoding="utf-8")
    assert 900_000 < path.stat().st_size < 1024 * 1024  # under the read cap: read whole
    Syncer(store).sync_tree(str(memdir))
    row = store.conn.execute("SELECT error FROM files WHERE path = ?", (str(path),)).fetchone()
    assert row is not None and row["error"] is None


def test_a_credential_deep_in_a_long_line_is_still_found() -> None:
    text = "x " * 60_000 + f"token {GH_TOKEN} " + "y " * 60_000
    assert find_secrets(text) == [{"line": 1, "kind": "GitHub token"}]
    assert GH_TOKEN not in redact(text) and "[redacted GitHub token]" in redact(text)


def test_redact_hides_each_shape_and_whole_private_key_blocks() -> None:
    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEsecretbody\nmore\n-----END RSA PRIVATE KEY-----"
    text = (
        f"id {AWS_ID} and {GH_TOKEN}\n"
        "db postgres://app:hunter22@db.internal:5432/app\n"
        f"{key}\nafter the key\n"
    )
    out = redact(text)
    for raw in (AWS_ID, GH_TOKEN, "hunter22", "MIIEsecretbody", "more\n"):
        assert raw not in out
    assert out.endswith("[redacted private key]\nafter the key\n")
    assert redact("plain prose, nothing to hide") == "plain prose, nothing to hide"
    assert redact_value({"a": [f"k {AWS_ID}"], "n": 3}) == {
        "a": ["k [redacted AWS access key id]"],
        "n": 3,
    }


def test_the_index_holds_no_raw_credential(store: IndexStore, memdir: Path) -> None:
    (memdir / "reference_ci.md").write_text(
        f"---\nname: CI bot {GH_TOKEN}\ndescription: the bot token is {AWS_ID}\n---\n"
        f"use {GH_TOKEN} for the bot\n",
        encoding="utf-8",
    )
    (memdir / "2025-01-02-03-04-shop.md").write_text(
        f"---\nproject-name: shop\nstatus: {AWS_ID}\n---\n## Session summary\n"
        f"deployed with {GH_TOKEN}\n",
        encoding="utf-8",
    )
    Syncer(store).sync_tree(str(memdir))
    store.close()
    with sqlite3.connect(store.path) as conn:
        dump = "\n".join(conn.iterdump())
    assert "[redacted GitHub token]" in dump
    assert GH_TOKEN not in dump and AWS_ID not in dump
    # Nor anything derived from it: the ranker's stored terms and the citations
    # are lowercased and split, so look for the value's pieces in any case.
    assert "fakefakefake" not in dump.lower() and "akiafake" not in dump.lower()
