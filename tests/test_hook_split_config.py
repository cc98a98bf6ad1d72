"""A hook in only one of ``~/.claude`` and ``$CLAUDE_CONFIG_DIR``: install-hook and doctor say so.

Claude Code reads ``$CLAUDE_CONFIG_DIR`` when it is set, ``~/.claude``
otherwise; a user whose shells differ gets memories in some sessions only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memoryd.integrations.install import install_claude_code


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A home with both folders: ``~/.claude`` and ``$CLAUDE_CONFIG_DIR`` elsewhere."""
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (tmp_path / "alt-claude").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "XDG_", "CLAUDE"))}
    env.update(HOME=str(home), CLAUDE_CONFIG_DIR=str(tmp_path / "alt-claude"))
    env["MEMORYD_SOCKET"] = str(tmp_path / "none.sock")
    return env


def memoryd(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "memoryd", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=env["HOME"],
    )
    assert done.returncode in (0, 1), done.stderr
    return done


def hook_check(env: dict[str, str]) -> dict[str, str]:
    checks = json.loads(memoryd(env, "doctor", "--json").stdout)["checks"]
    found: dict[str, str] = next(c for c in checks if c["name"] == "claude-code hook")
    return found


def test_install_hook_into_config_dir_warns_about_the_home_folder(env: dict[str, str]) -> None:
    home_settings = Path(env["HOME"]) / ".claude" / "settings.json"
    done = memoryd(env, "install-hook", "claude-code")
    assert f"not in {home_settings}" in done.stderr
    assert "started without CLAUDE_CONFIG_DIR gets no memories" in done.stderr
    assert f"--settings {home_settings}" in done.stderr
    check = hook_check(env)
    assert check["status"] == "warn" and f"not in {home_settings}" in check["detail"]
    # Covering both ends the warning.
    done = memoryd(env, "install-hook", "claude-code", "--settings", str(home_settings))
    assert "warning" not in done.stderr
    assert hook_check(env)["status"] == "ok"


def test_a_hook_only_in_the_home_folder_is_named_by_doctor(env: dict[str, str]) -> None:
    install_claude_code(Path(env["HOME"]) / ".claude" / "settings.json")
    check = hook_check(env)
    alt = Path(env["CLAUDE_CONFIG_DIR"]) / "settings.json"
    assert check["status"] == "warn"
    assert f"not in {alt}" in check["detail"]
    assert f"with CLAUDE_CONFIG_DIR={env['CLAUDE_CONFIG_DIR']} gets no memories" in check["detail"]


def test_one_folder_under_two_names_is_not_a_split(env: dict[str, str]) -> None:
    env = {**env, "CLAUDE_CONFIG_DIR": str(Path(env["HOME"]) / ".claude") + "/"}
    done = memoryd(env, "install-hook", "claude-code")
    assert "warning" not in done.stderr
    assert hook_check(env)["status"] == "ok"
