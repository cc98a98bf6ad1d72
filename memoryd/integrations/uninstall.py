"""``memoryd uninstall-hook claude-code``: take memoryd's hooks out of settings.json again.

The inverse of :mod:`memoryd.integrations.install`, as careful with the
user's file:

* only hook entries that run ``memoryd hook claude-code`` are removed; a
  matcher group, event list or ``hooks`` object left empty by that goes too;
* when what remains is exactly what a backup ``settings.json.bak-*`` holds
  (the copy the installer made before it changed anything), that backup is
  put back byte for byte, so the file is as it was before ``install-hook``;
* otherwise the file changed since (the user added settings): the current
  file is first copied to a new backup, then written without our hooks;
* a file the installer created (no backup) that holds nothing else is removed.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from memoryd.integrations.install import EVENTS, HOOK_MARKER, _read, _write, backup_copy


@dataclass
class UninstallResult:
    settings: Path
    removed: list[str]
    outcome: str
    """``absent`` (no hook of ours), ``restored`` (from ``backup``), ``rewritten``, ``deleted``."""
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
    if not doc and not _backups(settings):
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
        entries = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(entries, list):
            kept_groups.append(group)
            continue
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


def _ours(entry: object) -> bool:
    return isinstance(entry, dict) and HOOK_MARKER in str(entry.get("command", ""))


def _backups(settings: Path) -> list[Path]:
    """The installer's backups of ``settings``, newest first."""
    return sorted(settings.parent.glob(f"{settings.name}.bak-*"), reverse=True)


def _matching_backup(settings: Path, doc: Mapping[str, object]) -> Path | None:
    """The newest backup whose JSON is ``doc``: the file as it was before the install."""
    for backup in _backups(settings):
        try:
            if json.loads(backup.read_text(encoding="utf-8") or "{}") == doc:
                return backup
        except (OSError, ValueError):
            continue
    return None
