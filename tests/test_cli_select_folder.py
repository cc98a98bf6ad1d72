"""`memoryd select` fails on a folder that is not a memory folder, by the reply's
`memory_folder`, and shows the note of a memory folder whose files all have errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memoryd.cli import main


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORYD_SOCKET", str(tmp_path / "d.sock"))
    monkeypatch.setenv("MEMORYD_DB", str(tmp_path / "index.db"))


def select(capsys: pytest.CaptureFixture[str], folder: Path) -> tuple[int, dict[str, object]]:
    code = main(["select", "run the tests", "--dir", str(folder), "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_broken_memories_are_a_memory_folder_and_plain_notes_are_not(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "feedback_x.md").write_text("---\nname: [unclosed\n---\nbody\n")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "todo.md").write_text("# no header: not a memory\n")

    code, reply = select(capsys, broken)
    assert (code, reply["memory_folder"]) == (0, True), reply
    assert reply["note"]
    code, reply = select(capsys, notes)
    assert (code, reply["memory_folder"]) == (1, False), reply
    assert main(["select", "q", "--dir", str(broken)]) == 0
    assert capsys.readouterr().out.startswith(f"(no valid memories in {broken}")
