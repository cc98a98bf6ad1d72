"""``memoryd install-mcp codex`` / ``uninstall-mcp codex``: memoryd's MCP server in Codex's config.

The edit to ``config.toml`` is textual and checked: install appends one ``[mcp_servers.memoryd]``
table running ``memoryd mcp`` with this interpreter, uninstall removes it and its sub-tables;
the result must parse to the old document plus (or minus) that entry, else nothing is written.
The old file is kept as a backup; a file that is not TOML is refused unchanged.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoryd.errors import ConfigError
from memoryd.integrations.install import backup_copy, read_text, write_text

NAME = "memoryd"
ENV_VARS = (
    "MEMORYD_SOCKET",
    "XDG_RUNTIME_DIR",
    "XDG_STATE_HOME",
    "CLAUDE_CONFIG_DIR",
    "CLAUDE_CODE_REMOTE_MEMORY_DIR",
    "CLAUDE_COWORK_MEMORY_PATH_OVERRIDE",
)  # what ``memoryd mcp`` reads (Codex clears the rest of the environment)
_HEADER = re.compile(r'^\s*\[\s*mcp_servers\s*\.\s*(?:memoryd|"memoryd")\s*(\]|\.)')
_ANY_HEADER = re.compile(r"^\s*\[")


def default_config() -> Path:
    home = os.environ.get("CODEX_HOME")
    return (Path(home) if home else Path.home() / ".codex") / "config.toml"


# dict[str, Any]: a TOML table, as tomllib reads Codex's config.toml.
def entry() -> dict[str, Any]:
    return {
        "command": sys.executable,
        "args": ["-m", "memoryd", "mcp"],
        "env_vars": list(ENV_VARS),
    }


@dataclass
class McpResult:
    config: Path
    outcome: str
    """``added``, ``present`` (left as is), ``removed`` or ``absent`` (nothing to remove)."""
    backup: Path | None = None
    command: str | None = None

    def report(self) -> str:
        lines = {
            "added": f"added [mcp_servers.{NAME}] to {self.config} (runs {self.command})",
            "present": f"[mcp_servers.{NAME}] already in {self.config} (runs {self.command}); "
            "left as is",
            "removed": f"removed [mcp_servers.{NAME}] from {self.config}",
            "absent": f"no [mcp_servers.{NAME}] in {self.config}; nothing changed",
        }
        out = [lines[self.outcome]]
        if self.backup is not None:
            out.append(f"previous config saved as {self.backup}")
        return "\n".join(out)


def install(config: Path) -> McpResult:
    """Append memoryd's ``[mcp_servers.memoryd]`` to ``config`` unless it is there."""
    text, doc = _read(config)
    servers = doc.get("mcp_servers")
    if isinstance(servers, dict) and NAME in servers:
        found = servers[NAME]
        command = found.get("command") if isinstance(found, dict) else None
        return McpResult(config, "present", command=str(command))
    wanted = entry()
    block = f"[mcp_servers.{NAME}]\n" + "".join(
        f"{key} = {_toml(value)}\n" for key, value in wanted.items()
    )
    if text and not text.endswith("\n"):
        text += "\n"
    new = text + ("\n" if text else "") + block
    expected = {**doc, "mcp_servers": {**(servers or {}), NAME: wanted}}
    _check(config, new, expected, "add")
    backup = backup_copy(config) if config.exists() else None
    write_text(config, new)
    return McpResult(config, "added", backup, wanted["command"])


def uninstall(config: Path) -> McpResult:
    """Remove memoryd's ``[mcp_servers.memoryd]`` (and its sub-tables) from ``config``."""
    text, doc = _read(config)
    servers = doc.get("mcp_servers")
    if not isinstance(servers, dict) or NAME not in servers:
        return McpResult(config, "absent")
    lines = text.splitlines(keepends=True)
    ours = [i for i, line in enumerate(lines) if _HEADER.match(line)]
    if not ours:
        raise ConfigError(
            f"{config}: mcp_servers.{NAME} is not written as a [mcp_servers.{NAME}] table; "
            "remove it by hand, nothing was changed"
        )
    drop: set[int] = set()
    for start in ours:
        end = start + 1
        while end < len(lines) and not _ANY_HEADER.match(lines[end]):
            end += 1
        drop.update(range(start, end))
    first = min(ours)
    if max(drop) == len(lines) - 1 and first > 0 and not lines[first - 1].strip():
        drop.add(first - 1)  # the blank line install put before the table
    new = "".join(line for i, line in enumerate(lines) if i not in drop)
    expected = {**doc, "mcp_servers": {k: v for k, v in servers.items() if k != NAME}}
    _check(config, new, expected, "remove")
    backup = backup_copy(config)
    write_text(config, new)
    return McpResult(config, "removed", backup)


# dict[str, Any]: the user's config.toml as tomllib reads it, not yet checked.
def _read(config: Path) -> tuple[str, dict[str, Any]]:
    text = read_text(config)
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"{config} is not valid TOML ({exc}); fix it or pass --config, nothing was changed"
        ) from None


# dict[str, Any]: config.toml documents as tomllib reads them.
def _check(config: Path, new: str, expected: dict[str, Any], verb: str) -> None:
    """Refuse unless ``new`` parses to ``expected``: the edit touched memoryd's entry only."""
    try:
        got = tomllib.loads(new)
    except tomllib.TOMLDecodeError as exc:
        got = {"error": str(exc)}
    if _trimmed(got) != _trimmed(expected):
        raise ConfigError(
            f"{config}: cannot {verb} [mcp_servers.{NAME}] without changing other settings "
            "(is mcp_servers written as an inline table?); edit it by hand, nothing was changed"
        )


# dict[str, Any]: a config.toml document as tomllib reads it.
def _trimmed(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` without an empty ``mcp_servers`` (removing the last server may leave one)."""
    return {k: v for k, v in doc.items() if not (k == "mcp_servers" and v == {})}


def _toml(value: object) -> str:
    """A string or a list of strings as TOML (JSON's string escapes are TOML's)."""
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)
