"""bench/locomo.py: both LoCoMo layouts, the header-only folders, and reading from a git copy.

LoCoMo itself is not in this repository (CC BY-NC); the conversations here are
two tiny ones written for the test, one in each layout the repository has
shipped.
"""

from __future__ import annotations

import io
import json
import sys
import zipfile
from pathlib import Path

from git_repo import Repo

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import locomo

from memoryd.indexer.parse import parse_file

TURNS = [{"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a greyhound called Pip."}]
CURRENT = {
    "sample_id": "conv-1",
    "conversation": {
        "speaker_a": "Ana",
        "speaker_b": "Bo",
        "session_1_date_time": "1:00 pm on 2 May, 2023",
        "session_1": TURNS,
        "session_2_date_time": "3:00 pm on 9 May, 2023",
        "session_2": [{"speaker": "Bo", "dia_id": "D2:1", "text": "Pottery class was fun."}],
    },
    "session_summary": {
        "session_1_summary": "Ana and Bo talked on 2 May. Ana adopted a greyhound named Pip. "
        "She walks him twice a day along the river and plans to enter him in a race.",
        "session_2_summary": "Bo started a pottery class.",
    },
    "qa": [
        {"question": "What is Ana's dog called?", "answer": "Pip", "evidence": ["D1:1"]},
        {"question": "Hobbies?", "answer": "pottery", "evidence": ["D2:1", "D1:1"]},
        {"question": "Unanswerable", "answer": "-", "evidence": ["D9:1"]},
    ],
}
OLDER = {
    "speaker_a": "Ana",
    "speaker_b": "Bo",
    "session_1_date_time": "1:00 pm on 2 May, 2023",
    "session_1": TURNS,
    "events_session_1": {"Ana": ["Ana adopts a greyhound."], "Bo": [], "date": "2 May, 2023"},
    "events_session_2": {"Ana": [], "Bo": [], "date": "9 May, 2023"},
    "qa": [{"question": "What did Ana adopt?", "answer": "a dog", "evidence": ["D1:1"]}],
}


def test_the_current_layout_gives_sessions_summaries_and_qa() -> None:
    c = locomo.normalize(CURRENT)
    assert sorted(c["sessions"]) == [1, 2]
    assert c["sessions"][1] == ("1:00 pm on 2 May, 2023", TURNS)
    assert c["summaries"][2] == "Bo started a pottery class."
    assert len(c["qa"]) == 3


def test_the_older_layout_uses_each_session_s_events_as_its_summary() -> None:
    c = locomo.normalize(OLDER)
    assert c["summaries"] == {1: "Ana adopts a greyhound."}  # session 2 had no events
    assert c["sessions"][1][1] == TURNS


def test_condense_keeps_whole_sentences_up_to_the_limit() -> None:
    summary = CURRENT["session_summary"]["session_1_summary"]  # type: ignore[index]
    assert (
        locomo.condense(summary, 70)
        == "Ana and Bo talked on 2 May. Ana adopted a greyhound named Pip."
    )
    assert locomo.condense("one very long sentence without a stop", 14) == "one very long…"


def test_header_only_folders_hold_no_transcript(tmp_path: Path) -> None:
    c = locomo.normalize(CURRENT)
    locomo.write_folder(c, tmp_path / "h", "header")
    locomo.write_folder(c, tmp_path / "t", "transcript")
    header = (tmp_path / "h" / "project_session_01.md").read_text()
    full = (tmp_path / "t" / "project_session_01.md").read_text()
    assert "I adopted a greyhound" not in header
    assert "Ana: I adopted a greyhound called Pip." in full
    parsed = parse_file(str(tmp_path / "h" / "project_session_01.md"), "x.md", len(header))
    assert parsed.error is None
    assert parsed.description == locomo.condense(c["summaries"][1])
    assert "walks him twice a day" in parsed.body  # the body is the whole summary


def test_queries_name_only_sessions_present_in_the_folder(tmp_path: Path) -> None:
    c = locomo.normalize(CURRENT)
    locomo.write_folder(c, tmp_path / "f")
    queries = locomo.queries_of(c, tmp_path / "f")
    assert [q["gold"] for q in queries] == [
        ["project_session_01.md"],
        ["project_session_01.md", "project_session_02.md"],
    ]


def test_data_is_read_from_a_git_copy_json_or_zip(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "locomo")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("data/multimodal_dialog/locomo10_v2/1.json", json.dumps(OLDER))
    (repo.path / "data").mkdir()
    (repo.path / "data" / "locomo10.zip").write_bytes(buf.getvalue())
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "zip")
    source, data = locomo.load(None, repo.path)
    assert source.endswith(":data/locomo10.zip")
    assert data[0]["summaries"] == {1: "Ana adopts a greyhound."}
    repo.write("data/locomo10.json", json.dumps([CURRENT]))
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "json", when=2_000_000_000)
    source, data = locomo.load(None, repo.path)
    assert source.endswith(":data/locomo10.json")
    assert sorted(data[0]["summaries"]) == [1, 2]


def test_missing_data_is_a_clear_error(tmp_path: Path) -> None:
    assert locomo.main(["--data", str(tmp_path / "nope.json")]) == 2
