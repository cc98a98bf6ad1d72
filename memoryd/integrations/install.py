"""``memoryd install-hook`` / ``uninstall-hook claude-code``: the hook in Claude Code's settings.

A file that is not a JSON object shaped as Claude Code expects is refused and left untouched.
Install appends our entry per event unless the event already runs ``memoryd hook claude-code``;
uninstall removes only those entries, and puts back the installer's backup when the rest equals
it (or removes a file holding nothing else). Any other change first copies the old file to
``settings.json.bak-<time>`` and replaces it atomically. The helpers here serve every installer.
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

from memoryd.claude_folders import config_dir, memory_folder
from memoryd.errors import ConfigError

EVENTS = ("UserPromptSubmit", "SessionStart")
HOOK_MARKER = "memoryd hook claude-code"
CLAUDE_TIMEOUT_S = 10
"""Claude Code's own kill timeout; the hook gives up after 2 s by itself."""


def hook_command() -> str:
    """The interpreter running now, so the hook works from a venv without PATH changes."""
    return f"{shlex.quote(sys.executable)} -m memoryd hook claude-code"


def default_settings() -> Path:
    return config_dir() / "settings.json"


@dataclass
class InstallResult:
    settings: Path
    added: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)
    backup: Path | None = None

    def report(self, cwd: str) -> str:
        """What changed, and the memory folder the hook serves for ``cwd``."""
        lines = [f"added {event} hook to {self.settings}" for event in self.added]
        lines += [f"{event} hook already in {self.settings}; left as is" for event in self.present]
        if self.backup is not None:
            lines.append(f"previous settings saved as {self.backup}")
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
    found = hook_commands(doc)
    for event in EVENTS:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise ConfigError(f"{settings}: 'hooks.{event}' is not a list; nothing was changed")
        if found[event]:
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
    """A warning when both ``~/.claude`` and ``$CLAUDE_CONFIG_DIR`` exist and only one has
    the hook (Claude Code started the other way gets no memories); else None."""
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
        return any(hook_commands(_read(settings)).values())
    except ConfigError:
        return False


def hook_commands(doc: object) -> dict[str, list[str]]:
    """Per event of :data:`EVENTS`, the commands in a settings ``doc`` that run memoryd's hook."""
    hooks = doc.get("hooks") if isinstance(doc, dict) else None
    found: dict[str, list[str]] = {}
    for event in EVENTS:
        listed = hooks.get(event) if isinstance(hooks, dict) else None
        groups = listed if isinstance(listed, list) else []
        entries = [e for g in groups if isinstance(g, dict) for e in _entries(g)]
        found[event] = [str(e["command"]) for e in entries if isinstance(e, dict) and _ours(e)]
    return found


def _entries(group: Mapping[str, object]) -> list[object]:
    entries = group.get("hooks")
    return entries if isinstance(entries, list) else []


def _ours(entry: object) -> bool:
    return isinstance(entry, dict) and HOOK_MARKER in str(entry.get("command", ""))


def read_text(path: Path) -> str:
    """The file's text; "" when it does not exist; :class:`ConfigError` when it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None


# dict[str, Any]: Claude Code's settings, another program's JSON: only ``hooks`` is edited.
def _read(settings: Path) -> dict[str, Any]:
    text = read_text(settings)
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


@dataclass
class UninstallResult:
    settings: Path
    removed: list[str]
    outcome: str
    """``absent``, ``restored`` (from ``backup``), ``rewritten`` or ``deleted``."""
    backup: Path | None = None

    def report(self) -> str:
        if self.outcome == "absent":
            return f"no memoryd hook in {self.settings}; nothing changed"
        lines = [f"removed the {event} hook from {self.settings}" for event in self.removed]
        if self.outcome == "restored":
            lines.append(f"restored {self.settings} as before install-hook, from {self.backup}")
        elif self.outcome == "deleted":
            lines.append(f"removed {self.settings}: install-hook created it, nothing else is in it")
        else:
            lines.append(f"kept the other changes made since install-hook; before: {self.backup}")
        return "\n".join(lines)


def uninstall_claude_code(settings: Path) -> UninstallResult:
    """Remove memoryd's UserPromptSubmit and SessionStart entries from ``settings``."""
    doc = _read(settings)
    hooks = doc.get("hooks")
    if not isinstance(hooks, dict):
        return UninstallResult(settings, [], "absent")
    removed = [event for event in EVENTS if _drop_ours(hooks, event)]
    if not removed:
        return UninstallResult(settings, [], "absent")
    if not hooks:
        del doc["hooks"]
    before = _matching_backup(settings, doc)
    if before is not None:
        shutil.copy2(before, settings)
        return UninstallResult(settings, removed, "restored", before)
    if not doc and not backups(settings):
        settings.unlink()
        return UninstallResult(settings, removed, "deleted")
    backup = backup_copy(settings)
    _write(settings, doc)
    return UninstallResult(settings, removed, "rewritten", backup)


def _drop_ours(hooks: dict[str, object], event: str) -> bool:
    """Remove memoryd's entries under ``event``; True when there were any."""
    groups = hooks.get(event)
    if not isinstance(groups, list):
        return False
    found = False
    kept_groups = []
    for group in groups:
        if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
            kept_groups.append(group)
            continue
        entries = _entries(group)
        kept = [e for e in entries if not _ours(e)]
        found = found or len(kept) < len(entries)
        if kept or not entries:
            kept_groups.append({**group, "hooks": kept})
    if not found:
        return False
    if kept_groups:
        hooks[event] = kept_groups
    else:
        del hooks[event]
    return True


def backups(path: Path) -> list[Path]:
    """The backups :func:`backup_copy` made of ``path``, newest first."""
    return sorted(path.parent.glob(f"{path.name}.bak-*"), reverse=True)


def _matching_backup(settings: Path, doc: Mapping[str, object]) -> Path | None:
    """The newest backup whose JSON is ``doc``: the file as it was before the install."""
    for backup in backups(settings):
        try:
            if json.loads(backup.read_text(encoding="utf-8") or "{}") == doc:
                return backup
        except (OSError, ValueError):
            continue
    return None
