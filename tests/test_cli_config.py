"""``memoryd config check`` and ``config show``: the file as serve reads it, in words."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from memoryd import config as config_mod
from memoryd.cli import main


@pytest.fixture
def config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "MEMORYD_SOCKET", "MEMORYD_DB"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    path = tmp_path / "config" / "memoryd" / "config.yaml"
    path.parent.mkdir(parents=True)
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_check_says_what_each_setting_does_and_where_it_came_from(
    config_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    config_file.write_text(f'roots: [{notes}]\nreports:\n  cron: "30 4 * * 1"\n')
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-shown")
    code, out, _ = run(capsys, "config", "check")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"{config_file} is valid; serve will accept it."
    assert f"  roots = {notes}  (file): serve watches these instead of the default folders" in lines
    cron = next(line for line in lines if line.startswith("  reports.cron = 30 4 * * 1  (file)"))
    assert "the next compaction report is due" in cron
    key = next(line for line in lines if line.startswith("  anthropic.api_key = <set>"))
    assert "(environment): select ranks with Claude" in key
    assert "sk-test-not-shown" not in out
    assert "defaults in effect:" in lines and "  reports.keep = 30: " in out


def test_check_refuses_what_serve_refuses_in_one_line(
    config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for text, fragment in (
        ("colour: blue\n", "unknown key(s): colour"),
        ('reports:\n  cron: "every night"\n', "'reports.cron' is not a cron expression"),
        ("roots: [a\n", "invalid YAML at line 2"),
    ):
        config_file.write_text(text)
        code, out, err = run(capsys, "config", "check")
        assert (code, out) == (1, "")
        assert err.startswith("memoryd: error: ") and err.count("\n") == 1 and fragment in err


def test_check_without_a_file_says_every_setting_is_its_default(
    config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "config", "check")
    assert code == 0
    assert out.startswith(f"no config file at {config_file}: every setting is its default.\n")
    assert "no key: select ranks with the local ranker" in out


def test_show_prints_a_config_file_that_means_the_same(
    config_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config_file.write_text("reconcile_interval: 120\nreports:\n  keep: 5\n")
    code, out, _ = run(capsys, "config", "show")
    assert code == 0 and out.startswith(f"# the effective configuration: {config_file}")
    shown = yaml.safe_load(out)
    assert shown["reconcile_interval"] == 120 and shown["reports"]["keep"] == 5
    assert shown["reports"]["cron"] == "0 3 * * *" and shown["anthropic"]["api_key"] is None
    copy = tmp_path / "copy.yaml"
    copy.write_text(out)
    assert config_mod.load(copy) == replace(config_mod.load(config_file), source=copy)
