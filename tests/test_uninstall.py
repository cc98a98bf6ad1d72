"""``uninstall-hook claude-code`` and ``uninstall-service`` undo their installers, keeping edits."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memoryd.cli import main
from memoryd.integrations.install import install_claude_code
from memoryd.integrations.systemd_units import install

THEIRS = {
    "model": "opus",
    "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "my-linter"}]}]},
}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


@pytest.fixture
def settings(tmp_path: Path) -> Path:
    return tmp_path / "claude" / "settings.json"


def test_uninstall_hook_puts_back_the_file_as_it_was(
    settings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings.parent.mkdir()
    original = json.dumps(THEIRS, indent=4) + "\n"  # not how memoryd would format it
    settings.write_text(original)
    install_claude_code(settings)
    assert "memoryd hook claude-code" in settings.read_text()
    out = run(capsys, "uninstall-hook", "claude-code", "--settings", str(settings))
    assert settings.read_text() == original, "byte for byte, from the installer's backup"
    assert "removed the UserPromptSubmit hook" in out and "removed the SessionStart hook" in out
    assert "restored " in out and ".bak-" in out
    again = run(capsys, "uninstall-hook", "claude-code", "--settings", str(settings))
    assert again == f"no memoryd hook in {settings}; nothing changed\n"


def test_uninstall_hook_keeps_what_was_added_since(
    settings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings.parent.mkdir()
    settings.write_text(json.dumps(THEIRS))
    install_claude_code(settings)
    doc = json.loads(settings.read_text())
    doc["theme"] = "dark"
    doc["hooks"]["UserPromptSubmit"][-1]["hooks"].append({"type": "command", "command": "x"})
    settings.write_text(json.dumps(doc))
    before = settings.read_text()
    out = run(capsys, "uninstall-hook", "claude-code", "--settings", str(settings))
    after = json.loads(settings.read_text())
    assert after["theme"] == "dark" and after["model"] == "opus"
    commands = [e["command"] for g in after["hooks"]["UserPromptSubmit"] for e in g["hooks"]]
    assert commands == ["my-linter", "x"]
    assert "SessionStart" not in after["hooks"]
    kept = out.strip().rsplit("before: ", 1)[1]
    assert Path(kept).read_text() == before, "the file as it was is kept aside"


def test_uninstall_hook_removes_a_file_the_installer_created(
    settings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    install_claude_code(settings)
    out = run(capsys, "uninstall-hook", "claude-code", "--settings", str(settings))
    assert not settings.exists() and "install-hook created it" in out


def test_uninstall_service_removes_units_and_enable_links(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    units = tmp_path / "units"
    install(units, [])
    wants = units / "default.target.wants"
    wants.mkdir()
    (wants / "memoryd.service").symlink_to(units / "memoryd.service")
    other = units / "other.service"
    other.write_text("[Service]\nExecStart=/bin/true\n")
    out = run(capsys, "uninstall-service", "--unit-dir", str(units))
    assert sorted(p.name for p in units.iterdir()) == ["default.target.wants", "other.service"]
    assert list(wants.iterdir()) == []
    assert f"removed {units / 'memoryd.service'}\n  and its enable link {wants}" in out
    assert "systemctl --user daemon-reload" in out
    again = run(capsys, "uninstall-service", "--unit-dir", str(units))
    assert "is not installed" in again and "daemon-reload" not in again


def test_uninstall_service_restores_a_replaced_unit_and_keeps_edits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    units = tmp_path / "units"
    units.mkdir()
    mine = "[Unit]\nDescription=my own memoryd\n[Service]\nExecStart=/opt/memoryd serve\n"
    (units / "memoryd.service").write_text(mine)
    install(units, [])  # keeps mine as memoryd.service.bak-<time>
    socket_unit = units / "memoryd.socket"
    socket_unit.write_text(socket_unit.read_text() + "# my edit\n")
    out = run(capsys, "uninstall-service", "--unit-dir", str(units))
    assert (units / "memoryd.service").read_text() == mine
    assert "restored " in out
    assert not socket_unit.exists()
    kept = [p for p in units.iterdir() if p.name.startswith("memoryd.socket.bak-")]
    assert len(kept) == 1 and kept[0].read_text().endswith("# my edit\n")
    assert f"you had edited it: a copy is kept as {kept[0]}" in out


def test_a_unit_that_is_not_memoryds_is_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    units = tmp_path / "units"
    units.mkdir()
    (units / "memoryd.service").write_text("[Service]\nExecStart=/usr/bin/something-else\n")
    out = run(capsys, "uninstall-service", "--unit-dir", str(units))
    assert "is not memoryd's; left as is" in out
    assert os.path.exists(units / "memoryd.service")
