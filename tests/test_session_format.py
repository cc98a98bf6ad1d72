"""Session file format: validation, rendering, round trips through the real parser."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from memoryd.errors import InvalidParams
from memoryd.indexer.parse import parse_bytes, parse_file
from memoryd.methods import Save
from memoryd.params import decode
from memoryd.sessions._sections import parse_sections, resume_line
from memoryd.sessions.format import (
    SessionInput,
    render_session,
    session_filename,
    session_input_from_file,
    validate_save_params,
)

NOW = dt.datetime(2025, 4, 11, 9, 0, tzinfo=dt.UTC)


def params(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "project": "shop-backend",
        "session": "2025-04-08-15-45",
        "mode": "architect",
        "status": "paused",
        "last_checkpoint": "CP-S2",
        "checkpoints_approved": ["CP-S0", "CP-S1"],
        "checkpoint_decisions": {
            "CP-S0": {"option": "A", "note": "Approved as-is"},
            "CP-S1": {"option": "C", "regenerated_count": 1},
        },
        "target_dir": "shop/payments",
        "session_summary": "Reviewed the rollout.\nPaused on the grace period.",
        "steps_completed": {"S0": "Merged PR #2231.", "S1": "Reverted per-attempt emails."},
        "active_state": "- Flag at 10%.\n- Open: grace period (3 vs 5 days).",
        "key_decisions": ["Email only on final failure.", "Hold stock until the last attempt."],
    }
    base.update(overrides)
    return base


def checked(given: dict[str, Any], now: dt.datetime | None = None) -> SessionInput:
    """The session fields of ``given`` as ``save`` checks them: wire types, then the rest."""
    return validate_save_params(decode(Save, {"dir": "/tmp/ignored", **given}), now=now)


def parse(text: str) -> Any:
    record = parse_bytes(text.encode("utf-8"), "session")
    assert record.error is None, record.error
    return record


def test_render_then_parse_round_trips_every_field() -> None:
    inp = checked(params())
    text = render_session(inp)
    meta = parse(text).meta
    assert meta["schema_version"] == "1.1"
    assert meta["project-name"] == "shop-backend"
    assert meta["session"] == "2025-04-08-15-45"
    assert meta["mode"] == "architect" and meta["status"] == "paused"
    assert meta["last-checkpoint"] == "CP-S2"
    assert meta["checkpoints-approved"] == ["CP-S0", "CP-S1"]
    assert meta["checkpoint_decisions"] == {
        "CP-S0": {"option": "A", "note": "Approved as-is"},
        "CP-S1": {"option": "C", "regenerated_count": 1},
    }
    assert meta["target-dir"] == "shop/payments"
    started = dt.datetime.fromisoformat(meta["last_session_at"])
    assert started == dt.datetime(2025, 4, 8, 15, 45).astimezone()
    sections = parse_sections(text)
    assert sections.summary_text == "Reviewed the rollout. Paused on the grace period."
    assert [(s.label, s.text) for s in sections.steps] == list(inp.steps_completed.items())
    assert [e.text for e in sections.key_decisions] == inp.key_decisions
    assert [e.text for e in sections.active_state] == [
        "Flag at 10%.",
        "Open: grace period (3 vs 5 days).",
    ]
    lines = text.split("\n")
    for entry in sections.entries():  # line numbers point into the file
        assert entry.text.split()[-1] in lines[entry.first_line - 1] + lines[entry.last_line - 1]


def test_yaml_breaking_values_survive_intact() -> None:
    nasty = 'note: "quoted" # not a comment, {braces}, [list], a: b\nsecond line --- end'
    inp = checked(
        params(
            target_dir="dir: with colon #hash",
            checkpoints_approved=["CP-S0", "yes", "1.0"],
            checkpoint_decisions={"null": {"option": "- A", "note": nasty}},
            last_checkpoint="true",
        )
    )
    meta = parse(render_session(inp)).meta
    assert meta["target-dir"] == "dir: with colon #hash"
    assert meta["checkpoints-approved"] == ["CP-S0", "yes", "1.0"]
    assert meta["checkpoint_decisions"] == {"null": {"option": "- A", "note": nasty}}
    assert meta["last-checkpoint"] == "true"


def test_multiline_bullets_stay_one_entry() -> None:
    inp = checked(params(key_decisions=["first line\nsecond line"]))
    decisions = parse_sections(render_session(inp)).key_decisions
    assert [e.text for e in decisions] == ["first line second line"]
    assert decisions[0].last_line == decisions[0].first_line + 1


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"project": "Shop Floor"}, "'project'"),
        ({"project": "a/b"}, "'project'"),
        ({"project": "a..b"}, "'project'"),
        ({"project": "x" * 101}, "'project'"),
        ({"project": None}, "'project' is required"),
        ({"session": "2025-02-30-10-00"}, "'session'"),
        ({"session": "2025-04-08 15:45"}, "'session'"),
        ({"session": "2025-04-08-24-00"}, "'session'"),
        ({"mode": "turbo"}, "'mode'"),
        ({"status": "done"}, "'status'"),
        ({"checkpoints_approved": "CP-S0"}, "'checkpoints_approved'"),
        ({"checkpoints_approved": ["ok", 3]}, "'checkpoints_approved'"),
        ({"checkpoints_approved": ["ok", "C 1"]}, "'checkpoints_approved[1]'"),
        ({"checkpoint_decisions": ["A"]}, "'checkpoint_decisions'"),
        ({"checkpoint_decisions": {"CP-S0": "A"}}, "'checkpoint_decisions.CP-S0'"),
        ({"checkpoint_decisions": {"CP-S0": {"note": "x"}}}, "'checkpoint_decisions.CP-S0.option'"),
        (
            {"checkpoint_decisions": {"CP-S0": {"option": "A", "regenerated_count": -1}}},
            "regenerated_count",
        ),
        ({"checkpoint_decisions": {"CP-S0": {"option": "A", "who": 1}}}, "who"),
        ({"steps_completed": ["S0"]}, "'steps_completed'"),
        ({"steps_completed": {"S 0": "x"}}, "'steps_completed.S 0'"),
        ({"steps_completed": {"S0": 5}}, "'steps_completed.S0'"),
        ({"key_decisions": "one"}, "'key_decisions'"),
        ({"key_decisions": ["ok", None]}, "'key_decisions'"),
        ({"key_decisions": ["ok", "a\x00"]}, "'key_decisions[1]'"),
        ({"key_decisions": ["ok", "  \n"]}, "'key_decisions[1]' is empty"),
        ({"session_summary": 3}, "'session_summary'"),
        ({"active_state": "fine\n## Key decisions"}, "'active_state' line 2"),
        ({"target_dir": "a\nb"}, "'target_dir'"),
        ({"last_checkpoint": "CP S2"}, "'last_checkpoint'"),
    ],
)
def test_bad_params_name_the_field(overrides: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidParams) as info:
        checked(params(**overrides))
    assert field in str(info.value)
    # The one field the message opens with, as a path into the params.
    assert str(info.value).startswith(f"'{info.value.data['field']}' ")


def test_session_defaults_to_now_in_local_time() -> None:
    inp = checked({"project": "p1"}, now=NOW)
    assert inp.session == NOW.astimezone().strftime("%Y-%m-%d-%H-%M")
    assert inp.checkpoints_approved == [] and inp.mode is None
    assert parse(render_session(inp)).meta["project-name"] == "p1"
    assert session_filename("p1", inp.session) == f"{inp.session}-p1.md"


V10 = """---
project-name: shop-backend
session: 1
mode: architect
status: completed
last-checkpoint: CP-CLOSE
checkpoints-approved: [CP-S0, CP-CLOSE]
checkpoint_decisions:
  CP-S0: {option: A, note: "Approved as-is"}
target-dir: shop/payments
---

## Session summary
Design session for payment retries.

## Steps completed
- S0: Mapped the flow.
- S1: Compared options.

## Active state
- Open: which decline codes are retryable.

## Key decisions
- Go with per-attempt ETA tasks for v1.
"""


def test_schema_10_file_is_readable_and_rerenders_as_11(tmp_path: Any) -> None:
    name = "2025-03-03-10-15-shop-backend.md"
    path = tmp_path / name
    path.write_text(V10, encoding="utf-8")
    record = parse_file(str(path), name, path.stat().st_size)
    assert record.error is None and record.meta["schema_version"] == "1.0"
    line, hours = resume_line("shop-backend", record.meta, NOW, filename=name)
    expected = (NOW - dt.datetime(2025, 3, 3, 10, 15).astimezone()) / dt.timedelta(hours=1)
    assert hours == pytest.approx(expected)
    assert f"last touched {int(expected // 24)} days ago, status: completed at CP-CLOSE" in line

    migrated = render_session(session_input_from_file(name, record.meta, V10))
    meta = parse(migrated).meta
    assert meta["schema_version"] == "1.1"
    assert meta["session"] == "2025-03-03-10-15"
    assert meta["checkpoint_decisions"] == {"CP-S0": {"option": "A", "note": "Approved as-is"}}
    assert "last_session_at" in meta
    sections = parse_sections(migrated)
    assert [s.label for s in sections.steps] == ["S0", "S1"]
    assert sections.key_decisions[0].text == "Go with per-attempt ETA tasks for v1."


def test_previous_meta_fills_fields_this_save_leaves_empty() -> None:
    previous = parse(V10).meta
    inp = checked(
        {
            "project": "shop-backend",
            "session": "2025-03-11-09-30",
            "checkpoint_decisions": {"CP-S1": {"option": "B"}},
        }
    )
    meta = parse(render_session(inp, previous)).meta
    assert meta["mode"] == "architect" and meta["target-dir"] == "shop/payments"
    assert meta["checkpoints-approved"] == ["CP-S0", "CP-CLOSE"]
    assert set(meta["checkpoint_decisions"]) == {"CP-S0", "CP-S1"}


def test_resume_line_wording() -> None:
    meta = {
        "status": "in-progress",
        "last-checkpoint": "CP-S2",
        "last_session_at": "2025-04-08T09:00:00+00:00",
    }
    line, hours = resume_line("shop-backend", meta, NOW)
    assert line == "Resuming `shop-backend` (last touched 3 days ago, status: in-progress at CP-S2)"
    assert hours == pytest.approx(72.0)
    recent = {"last_session_at": "2025-04-11T08:00:00+00:00"}
    assert resume_line("p", recent, NOW)[0] == "Resuming `p` (last touched 1 hour ago)"
    unknown, nan = resume_line("p", {"session": 3}, NOW)
    assert "unknown time" in unknown and nan != nan
