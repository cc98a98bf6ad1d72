"""``memoryd install-mcp codex`` / ``uninstall-mcp codex`` on Codex's config.toml.

The file is the user's: every byte outside memoryd's table stays, a file that
does not parse (or a memoryd entry written another way) is refused unchanged,
and running either command twice changes nothing the second time.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from memoryd.errors import ConfigError
from memoryd.integrations import codex

USER_CONFIG = """model = "o3"  # the user's
approval_policy = "on-request"

[mcp_servers.docs]
command = "docs-server"
args = ["--stdio"]

[profiles.fast]
model = "o4-mini"
"""


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memoryd", *args], env=env, capture_output=True, text=True
    )


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("CODEX", "MEMORYD_"))}
    return {**clean, "HOME": str(tmp_path / "home"), "CODEX_HOME": str(tmp_path / "codex-home")}


def test_install_adds_one_table_under_codex_home_and_uninstall_restores_every_byte(
    env: dict[str, str],
) -> None:
    config = Path(env["CODEX_HOME"]) / "config.toml"
    config.parent.mkdir()
    config.write_text(USER_CONFIG)
    done = run(env, "install-mcp", "codex")
    assert done.returncode == 0, done.stderr
    assert f"added [mcp_servers.memoryd] to {config}" in done.stdout
    text = config.read_text()
    assert text.startswith(USER_CONFIG)
    servers = tomllib.loads(text)["mcp_servers"]
    assert servers["docs"] == {"command": "docs-server", "args": ["--stdio"]}
    assert servers["memoryd"] == {
        "command": sys.executable,
        "args": ["-m", "memoryd", "mcp"],
        "env_vars": list(codex.ENV_VARS),
    }
    assert {"MEMORYD_SOCKET", "XDG_RUNTIME_DIR"} <= set(codex.ENV_VARS)
    # Twice: nothing changes.
    again = run(env, "install-mcp", "codex")
    assert "already in" in again.stdout and config.read_text() == text
    done = run(env, "uninstall-mcp", "codex")
    assert done.returncode == 0, done.stderr
    assert config.read_text() == USER_CONFIG
    assert "nothing changed" in run(env, "uninstall-mcp", "codex").stdout
    assert config.read_text() == USER_CONFIG
    assert not (Path(env["HOME"]) / ".codex").exists()


def test_without_codex_home_the_file_is_created_in_the_home_folder(env: dict[str, str]) -> None:
    del env["CODEX_HOME"]
    assert run(env, "install-mcp", "codex").returncode == 0
    config = Path(env["HOME"]) / ".codex" / "config.toml"
    assert tomllib.loads(config.read_text())["mcp_servers"]["memoryd"]["command"] == sys.executable


@pytest.mark.parametrize(
    "broken",
    ['model = "o3\n', "[mcp_servers.x]\ncommand = 1\n[mcp_servers.x]\n"],
    ids=["unterminated string", "table twice"],
)
def test_a_config_that_does_not_parse_is_refused_unchanged(
    env: dict[str, str], broken: str
) -> None:
    config = Path(env["CODEX_HOME"]) / "config.toml"
    config.parent.mkdir()
    config.write_text(broken)
    for command in ("install-mcp", "uninstall-mcp"):
        done = run(env, command, "codex")
        assert done.returncode == 1
        assert "is not valid TOML" in done.stderr and "nothing was changed" in done.stderr
        assert config.read_text() == broken
    assert list(config.parent.iterdir()) == [config]


def test_other_shapes_are_refused_rather_than_rewritten(tmp_path: Path) -> None:
    inline = tmp_path / "inline.toml"
    inline.write_text('mcp_servers = { docs = { command = "d" } }\n')
    with pytest.raises(ConfigError, match="inline table"):
        codex.install(inline)
    dotted = tmp_path / "dotted.toml"
    dotted.write_text('mcp_servers.memoryd.command = "python"\n')
    with pytest.raises(ConfigError, match="remove it by hand"):
        codex.uninstall(dotted)
    assert inline.read_text().startswith("mcp_servers = {") and "memoryd" in dotted.read_text()


def test_uninstall_takes_the_table_and_its_sub_tables_from_the_middle(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    before = 'model = "o3"\n\n'
    after = '[profiles.fast]\nmodel = "o4-mini"\n'
    ours = (
        '[mcp_servers.memoryd]\ncommand = "/venv/bin/python"\nargs = ["-m", "memoryd", "mcp"]\n\n'
        '[mcp_servers.memoryd.env]\nMEMORYD_SOCKET = "/run/memoryd.sock"\n\n'
    )
    config.write_text(before + ours + after)
    assert codex.uninstall(config).outcome == "removed"
    assert config.read_text() == before + after
