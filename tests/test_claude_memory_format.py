"""Claude Code 2.1's memory format: ``metadata:`` with a nested ``type:``, mixed with the flat one.

Claude Code tells the model to write ``name`` and ``description`` at the top,
``type`` under ``metadata:`` (often ``metadata: `` with a trailing space),
adds keys such as ``originSessionId``, and links memories with
``[[wiki-links]]``. Every part of memoryd that uses a type reads it from
either shape.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memoryd import cli
from memoryd.indexer.parse import parse_file
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.methods import Select as SelectRequest
from memoryd.select.selector import Selector

NESTED = (
    "---\n"
    "name: pytest-usage\n"
    "description: How to run pytest here, the fast subset and coverage flags\n"
    "metadata: \n"
    "  type: reference\n"
    "  originSessionId: 5f0c2a9e-1b7d-4c3e-9a61-0d2f8e4b7c15\n"
    "  node_type: memory\n"
    "---\n"
    "Run `pytest -m 'not slow'` for the fast subset; see [[xdist-gotcha]].\n"
)


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def parse(path: Path) -> tuple[str | None, str | None, str | None, str | None]:
    rec = parse_file(str(path), path.name, path.stat().st_size)
    return rec.error, rec.name, rec.description, rec.type


def test_the_nested_shape_parses_with_its_keys_and_links(tmp_path: Path) -> None:
    path = write(tmp_path, "reference_pytest_usage.md", NESTED)
    assert parse(path) == (
        None,
        "pytest-usage",
        "How to run pytest here, the fast subset and coverage flags",
        "reference",
    )
    rec = parse_file(str(path), path.name, path.stat().st_size)
    assert "[[xdist-gotcha]]" in rec.body


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        # Without the trailing space, and with name/description nested as well.
        ("metadata:\n  type: user\n  name: Nested\n  description: nested d\n", ("Nested", "user")),
        # Both shapes: the nested type wins, as in Claude Code.
        ("name: n\ndescription: d\ntype: user\nmetadata:\n  type: project\n", ("n", "project")),
        ("name: n\ndescription: d\ntype: feedback\n", ("n", "feedback")),
        # metadata that is not a mapping is another unknown key.
        ("name: n\ndescription: d\ntype: user\nmetadata: some text\n", ("n", "user")),
        ("name: n\ndescription: d\nmetadata:\n", ("n", None)),
        ("name: n\ndescription: d\noriginSessionId: abc\nfoo: [1, 2]\n", ("n", None)),
    ],
)
def test_either_shape_gives_name_and_type(
    tmp_path: Path, header: str, expected: tuple[str, str | None]
) -> None:
    error, name, _, mtype = parse(write(tmp_path, "m.md", f"---\n{header}---\nbody\n"))
    assert error is None
    assert (name, mtype) == expected


def test_a_bad_nested_value_is_named_where_it_is(tmp_path: Path) -> None:
    error, *_ = parse(
        write(tmp_path, "m.md", "---\ndescription: d\nmetadata:\n  type: gotcha\n---\n")
    )
    assert (
        error
        == "invalid metadata.type 'gotcha' (expected one of user, feedback, project, reference)"
    )
    error, *_ = parse(write(tmp_path, "m.md", "---\nmetadata:\n  description: [a]\n---\n"))
    assert error == "'metadata.description' must be a string, got list"


def synced(db: Path, folder: Path) -> sqlite3.Connection:
    """Open the index at ``db`` (migrating it), sync ``folder``; a reader on the result."""
    store = IndexStore(db)
    try:
        Syncer(store).sync_tree(str(folder))
    finally:
        store.close()
    return sqlite3.connect(db)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    folder = tmp_path / "memory"
    write(folder, "reference_pytest_usage.md", NESTED)
    write(
        folder,
        "feedback_xdist_gotcha.md",
        "---\nname: xdist-gotcha\ndescription: 'Gotcha: pytest -n auto shares one test database'\n"
        "metadata:\n  type: feedback\n---\nWarning: give every worker its own database.\n",
    )
    return folder


def test_list_and_the_tool_rules_see_the_nested_type(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "index.db"
    assert cli.main(["index", str(folder), "--db", str(db)]) == 0
    capsys.readouterr()
    assert cli.main(["list", str(folder), "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "[reference] reference_pytest_usage.md" in out
    assert "[feedback] feedback_xdist_gotcha.md" in out
    store = IndexStore(db)
    try:
        req = SelectRequest(
            query="how do I run pytest with xdist workers?",
            dir=str(folder),
            recent_tools=("pytest",),
            ranker="local",
        )
        result = Selector().run(store.conn, req, str(folder), "r").result
    finally:
        store.close()
    # A reference is a usage doc: skipped while pytest runs; the gotcha stays.
    assert result["excluded"]["tool_doc_files"] == ["reference_pytest_usage.md"]
    assert [s["filename"] for s in result["selected"]] == ["feedback_xdist_gotcha.md"]
    assert result["selected"][0]["type"] == "feedback"
