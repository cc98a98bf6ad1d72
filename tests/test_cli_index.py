"""``memoryd index`` and ``memoryd list``: output formats, exit codes, one-line errors.

Each command finds no daemon and starts one in the test's own folders (tests/isolation.py
stops it at the end); ``index`` is that daemon's rescan of the folder.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CORPUS, MakeMemory

from memoryd.cli import main
from memoryd.cli.connect import state_for
from memoryd.indexer import queries
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer

INDEX_LINE = re.compile(
    r"^added (\d+), updated (\d+), removed (\d+), unchanged (\d+), errors (\d+) in \d+\.\d\d s$"
)
LIST_LINE = re.compile(
    r"^- \[(user|feedback|project|reference|untyped|index|session)\] (\S+) "
    r"\((\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)\): (.*)$"
)
STARTED = "memoryd: no daemon answered on "
"""The line a command that started a daemon prints on stderr."""


@pytest.fixture
def folder(memdir: Path, make_memory: MakeMemory) -> Path:
    make_memory("feedback_tests.md", "run the tests before pushing")
    make_memory("reference_deploy.md", "how to deploy", type="reference")
    (memdir / "project_broken.md").write_text("no frontmatter here\n")
    (memdir / "MEMORY.md").write_text("- [Deploy](reference_deploy.md) — deploying\n")
    return memdir


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_index_human_output(
    capsys: pytest.CaptureFixture[str], folder: Path, db_file: Path
) -> None:
    code, out, err = run(capsys, "index", str(folder), "--db", str(db_file))
    assert code == 0 and err.startswith(STARTED) and f"log {state_for(db_file)}" in err
    lines = out.splitlines()
    m = INDEX_LINE.match(lines[0])
    assert m is not None, lines[0]
    # The daemon indexes a folder as it takes it as a root; the rescan then finds it unchanged.
    assert m.groups() == ("0", "0", "0", "4", "1")
    broken = folder / "project_broken.md"
    assert lines[1:] == [
        f"  error: {broken}: no frontmatter: the file does not start with a '---' line"
    ]
    code, out, err = run(capsys, "index", str(folder), "--db", str(db_file))
    m = INDEX_LINE.match(out.splitlines()[0])
    assert m is not None and m.groups() == ("0", "0", "0", "4", "1") and err == ""


def test_index_json(capsys: pytest.CaptureFixture[str], folder: Path, db_file: Path) -> None:
    code, out, _ = run(capsys, "index", str(folder), "--db", str(db_file), "--json")
    assert code == 0
    data = json.loads(out)
    assert set(data) == {"added", "updated", "removed", "unchanged", "errors", "seconds", "dirs"}
    assert (data["added"], data["updated"], data["removed"], data["unchanged"]) == (0, 0, 0, 4)
    assert data["dirs"] == [str(folder)]
    assert data["errors"] == [
        {
            "path": str(folder / "project_broken.md"),
            "error": "no frontmatter: the file does not start with a '---' line",
        }
    ]
    assert isinstance(data["seconds"], float) and data["seconds"] >= 0


def test_index_several_dirs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, make_memory: MakeMemory, db_file: Path
) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    make_memory("feedback_a.md", directory=one)
    make_memory("feedback_b.md", directory=two)
    make_memory("feedback_c.md", directory=two / "nested")
    code, out, _ = run(capsys, "index", str(one), str(two), "--db", str(db_file), "--json")
    data = json.loads(out)
    assert code == 0 and data["unchanged"] == 3 and data["dirs"] == [str(one), str(two)]


def test_index_refuses_a_folder_with_no_memories_of_its_own(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, make_memory: MakeMemory
) -> None:
    """The daemon would not keep it fresh: it says what the folder holds instead."""
    make_memory("feedback_b.md", directory=tmp_path / "top" / "memory")
    code, _, err = run(capsys, "index", str(tmp_path / "top"))
    assert code == 1 and "not reindexed" in err and "did you mean" in err


def test_db_from_environment(
    capsys: pytest.CaptureFixture[str],
    folder: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    db = tmp_path / "env" / "index.db"
    monkeypatch.setenv("MEMORYD_DB", str(db))
    code, _, _ = run(capsys, "index", str(folder))
    assert code == 0 and db.is_file()


def test_list_lines(capsys: pytest.CaptureFixture[str], folder: Path, db_file: Path) -> None:
    code, out, err = run(capsys, "list", str(folder), "--db", str(db_file))
    assert code == 0 and err.startswith(STARTED)
    lines = out.splitlines()
    entries = [LIST_LINE.match(line) for line in lines[:3]]
    assert all(entries), lines
    got = [(m.group(1), m.group(2), m.group(4)) for m in entries if m]
    assert sorted(got) == [
        ("feedback", "feedback_tests.md", "run the tests before pushing"),
        ("index", "MEMORY.md", "memory index: 1 entries in 1 lines"),
        ("reference", "reference_deploy.md", "how to deploy"),
    ]
    when = next(m.group(3) for m in entries if m and m.group(2) == "feedback_tests.md")
    mtime = (folder / "feedback_tests.md").stat().st_mtime
    assert when == dt.datetime.fromtimestamp(int(mtime), dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert lines[3] == "1 file(s) could not be parsed:"
    assert lines[4] == (
        f"  ! {folder / 'project_broken.md'}: "
        "no frontmatter: the file does not start with a '---' line"
    )
    assert len(lines) == 5


def test_list_json(capsys: pytest.CaptureFixture[str], folder: Path, db_file: Path) -> None:
    code, out, _ = run(capsys, "list", str(folder), "--db", str(db_file), "--json")
    assert code == 0
    data = json.loads(out)
    assert data["dir"] == str(folder)
    assert {f["filename"] for f in data["files"]} == {
        "feedback_tests.md",
        "reference_deploy.md",
        "MEMORY.md",
    }
    assert [Path(e["path"]).name for e in data["errors"]] == ["project_broken.md"]


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memoryd", *argv],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ),  # the test's isolated environment (tests/isolation.py)
    )


@pytest.mark.parametrize("command", ["index", "list"])
def test_expected_failures_one_line_no_traceback(
    command: str, tmp_path: Path, folder: Path
) -> None:
    afile = folder / "feedback_tests.md"
    cases = [
        ([str(tmp_path / "missing")], "memory directory not found: "),
        ([str(afile)], "not a directory: "),
        # The daemon started for it cannot open that index: its error, and where its log is.
        ([str(folder), "--db", str(tmp_path / "memory")], "cannot open index at"),
    ]
    for args, fragment in cases:
        proc = _cli(command, *args)
        assert proc.returncode == 1, (args, proc.stderr)
        assert proc.stdout == ""
        assert "Traceback" not in proc.stderr
        lines = [line for line in proc.stderr.splitlines() if not line.startswith(STARTED)]
        assert len(lines) == 1, proc.stderr
        assert lines[0].startswith("memoryd: error: ")
        assert fragment in lines[0]
    assert f"(its log: {state_for(tmp_path / 'memory') / 'daemon.log'})" in proc.stderr


def test_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["index"])
    assert exc.value.code == 2
    assert "usage:" in capsys.readouterr().err


@pytest.mark.parametrize("part", ["projects", "sessions"])
def test_corpus_fixture_errors_are_exactly_the_listed_broken_files(
    part: str, db_file: Path
) -> None:
    root = CORPUS / part
    listing = root.parent / "broken_files.txt" if part == "projects" else root / "broken_files.txt"
    expected = set()
    for line in listing.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            rel = line.split("\t", 1)[0]
            expected.add(str((root.parent / rel) if part == "projects" else (root / rel)))
    st = IndexStore(db_file)
    try:
        result = Syncer(st).sync_trees([str(root.resolve())])
        got = {e["path"] for e in queries.errors_under(st.conn, str(root.resolve()))}
    finally:
        st.close()
    resolved_expected = {str(Path(p).resolve()) for p in expected}
    assert got == resolved_expected
    assert result.added == len(list(root.rglob("*.md")))
