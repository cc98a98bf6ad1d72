"""``memoryd install-hook claude-code``: wire the hook into Claude Code's settings.json.

The settings file belongs to the user and usually holds much more than hooks,
so the merge is conservative:

* a file that is not a JSON object (or whose ``hooks`` are not shaped as Claude
  Code expects) is refused with the reason, and left byte-for-byte untouched;
* existing hooks stay; ours is appended as its own matcher group per event;
* an event that already runs ``memoryd hook claude-code`` (with any Python) is
  left alone, so running the installer twice changes nothing;
* before any change the old file is copied to ``settings.json.bak-<timestamp>``
  and the new one replaces it atomically.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memoryd import paths
from memoryd.errors import ConfigError

EVENTS = ("UserPromptSubmit", "SessionStart")
HOOK_MARKER = "memoryd hook claude-code"
CLAUDE_TIMEOUT_S = 10
"""Claude Code's own kill timeout; the hook gives up after 2 s by itself."""


def hook_command() -> str:
    """The interpreter running now, so the hook works from a venv without PATH changes."""
    return f"{shlex.quote(sys.executable)} -m memoryd hook claude-code"


def default_settings() -> Path:
    return paths.claude_config_dir() / "settings.json"


@dataclass
class InstallResult:
    settings: Path
    added: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)
    backup: Path | None = None

    def report(self, cwd: str | None = None) -> str:
        """What changed; with ``cwd``, also the memory folder the hook serves for that directory."""
        lines = [f"added {event} hook to {self.settings}" for event in self.added]
        lines += [f"{event} hook already in {self.settings}; left as is" for event in self.present]
        if self.backup is not None:
            lines.append(f"previous settings saved as {self.backup}")
        if cwd is not None:
            from memoryd.claude_folders import memory_folder  # noqa: PLC0415

            found = memory_folder(cwd)
            state = "exists" if found.directory.is_dir() else "not created yet"
            lines.append(
                f"for {found.project} the hook reads {found.directory} ({state}; {found.reason})"
            )
        return "\n".join(lines)


def install_claude_code(settings: Path, command: str | None = None) -> InstallResult:
    """Merge the UserPromptSubmit and SessionStart hook entries into ``settings``."""
    command = command or hook_command()
    doc = _read(settings)
    hooks = doc.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError(f"{settings}: 'hooks' is not a JSON object; nothing was changed")
    result = InstallResult(settings)
    for event in EVENTS:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise ConfigError(f"{settings}: 'hooks.{event}' is not a list; nothing was changed")
        if any(_runs_memoryd(group) for group in groups):
            result.present.append(event)
            continue
        entry = {"type": "command", "command": command, "timeout": CLAUDE_TIMEOUT_S}
        groups.append({"hooks": [entry]})
        result.added.append(event)
    if result.added:
        if settings.exists():
            result.backup = backup_copy(settings)
        _write(settings, doc)
    return result


def hook_in_one_config_only() -> str | None:
    """A warning when memoryd's hook is in only one of ``~/.claude`` and ``$CLAUDE_CONFIG_DIR``.

    Claude Code reads ``$CLAUDE_CONFIG_DIR`` when it is set and ``~/.claude``
    otherwise; with both folders there and the hook in one, every session
    started the other way gets no memories. None when the two are one
    folder, one is missing, or both (or neither) run the hook.
    """
    given = os.environ.get("CLAUDE_CONFIG_DIR")
    default = Path.home() / ".claude"
    if not given or not default.is_dir() or not Path(given).is_dir():
        return None
    if os.path.samefile(given, default):
        return None
    with_hook = {folder: _has_hook(folder / "settings.json") for folder in (Path(given), default)}
    if len(set(with_hook.values())) == 1:
        return None
    has, lacks = sorted(with_hook, key=lambda folder: not with_hook[folder])
    who = "without CLAUDE_CONFIG_DIR" if lacks == default else f"with CLAUDE_CONFIG_DIR={given}"
    return (
        f"the hook is in {has / 'settings.json'} but not in {lacks / 'settings.json'}: "
        f"Claude Code started {who} gets no memories; to cover both run "
        f"`memoryd install-hook claude-code --settings {lacks / 'settings.json'}`"
    )


def _has_hook(settings: Path) -> bool:
    try:
        hooks = _read(settings).get("hooks")
    except ConfigError:
        return False
    groups = hooks.values() if isinstance(hooks, dict) else []
    return any(_runs_memoryd(g) for listed in groups if isinstance(listed, list) for g in listed)


# dict[str, Any]: Claude Code's settings file, any JSON object of another program's; the
# installer edits only its ``hooks`` and writes the rest back as it found it.
def _read(settings: Path) -> dict[str, Any]:
    try:
        text = settings.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {settings}: {exc}") from None
    if not text.strip():
        return {}
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise ConfigError(
            f"{settings} is not valid JSON ({exc}); fix it or pass --settings, nothing was changed"
        ) from None
    if not isinstance(doc, dict):
        raise ConfigError(f"{settings} does not hold a JSON object; nothing was changed")
    return doc


def _runs_memoryd(group: object) -> bool:
    entries = group.get("hooks") if isinstance(group, dict) else None
    return isinstance(entries, list) and any(
        isinstance(e, dict) and HOOK_MARKER in str(e.get("command", "")) for e in entries
    )


def backup_copy(settings: Path) -> Path:
    """Copy ``settings`` to ``<name>.bak-<local time>`` (never over an older backup)."""
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    backup = settings.with_name(f"{settings.name}.bak-{stamp}")
    n = 1
    while backup.exists():
        backup = settings.with_name(f"{settings.name}.bak-{stamp}-{n}")
        n += 1
    shutil.copy2(settings, backup)
    return backup


def _write(settings: Path, doc: Mapping[str, object]) -> None:
    write_text(settings, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")


def write_text(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically, keeping its mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        if path.exists():
            shutil.copymode(path, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
