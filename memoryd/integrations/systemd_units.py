"""``install-service`` and ``uninstall-service``: the systemd user units, written and removed.

The installed units' ``ExecStart`` runs the memoryd running this command. A unit the user
edited is never lost: install copies a differing one to ``<unit>.bak-<time>`` first;
uninstall puts back the newest such backup, else removes the unit and its ``*.wants/``
links (keeping a copy when it was edited), and leaves a unit that is not ours alone.
Neither calls systemctl.
"""

from __future__ import annotations

import difflib
import os
import shlex
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from memoryd.integrations.install import backup_copy, backups

UNITS = ("memoryd.service", "memoryd.socket")


def unit_text(name: str) -> str:
    return resources.files("memoryd.systemd").joinpath(name).read_text(encoding="utf-8")


def render(name: str, extra_args: list[str]) -> str:
    """The shipped unit with ``ExecStart`` running this interpreter's memoryd."""
    command = [sys.executable, "-m", "memoryd", "serve", *extra_args]
    start = "ExecStart=" + " ".join(shlex.quote(c) for c in command)
    lines = unit_text(name).splitlines()
    return "\n".join(start if line.startswith("ExecStart=") else line for line in lines) + "\n"


def user_unit_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "systemd" / "user"


@dataclass(frozen=True)
class UnitWrite:
    """What installing one unit did: ``new``, ``unchanged`` or ``replaced`` (with a backup)."""

    path: Path
    outcome: str
    backup: Path | None = None
    changes: tuple[str, ...] = ()


def install(target: Path | None, extra_args: list[str]) -> list[UnitWrite]:
    """Write both units into ``target`` (default the user unit dir), backing up edited ones."""
    target = target or user_unit_dir()
    target.mkdir(parents=True, exist_ok=True)
    done = []
    for name in UNITS:
        path = target / name
        text = render(name, extra_args)
        try:
            old = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            old = None
        if old == text:
            done.append(UnitWrite(path, "unchanged"))
            continue
        backup = None if old is None else backup_copy(path)
        path.write_text(text, encoding="utf-8")
        if old is None:
            done.append(UnitWrite(path, "new"))
            continue
        diff = difflib.unified_diff(old.splitlines(), text.splitlines(), lineterm="", n=0)
        changes = tuple(d for d in diff if d[:1] in "+-" and d[:3] not in ("+++", "---"))
        done.append(UnitWrite(path, "replaced", backup, changes))
    return done


MARKER = "memoryd serve"  # in every unit install-service writes


@dataclass(frozen=True)
class UnitRemoval:
    """What happened to one unit: ``absent``, ``foreign``, ``restored``, ``removed``."""

    path: Path
    outcome: str
    backup: Path | None = None
    links: tuple[Path, ...] = ()
    edited: bool = False


def uninstall(target: Path | None) -> list[UnitRemoval]:
    """Restore or remove both units in ``target`` (default the user unit dir)."""
    target = target or user_unit_dir()
    return [_one(target, name) for name in UNITS]


def _one(target: Path, name: str) -> UnitRemoval:
    path = target / name
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return UnitRemoval(path, "absent")
    if not _ours(name, text):
        return UnitRemoval(path, "foreign")
    kept_aside = backups(path)
    if kept_aside:
        os.replace(kept_aside[0], path)
        return UnitRemoval(path, "restored", kept_aside[0])
    edited = _body(text) != _body(render(name, []))
    kept = backup_copy(path) if edited else None
    links = tuple(_enable_links(target, path))
    for link in links:
        link.unlink()
    path.unlink()
    return UnitRemoval(path, "removed", kept, links, edited)


def _ours(name: str, text: str) -> bool:
    return MARKER in text or (name.endswith(".socket") and "Description=memoryd" in text)


def _body(text: str) -> list[str]:
    """The unit without its ExecStart line, which names the installing interpreter."""
    return [line for line in text.splitlines() if not line.startswith("ExecStart=")]


def _enable_links(target: Path, unit: Path) -> list[Path]:
    """``*.wants/<unit>`` symlinks in ``target`` that point at ``unit``."""
    real = os.path.realpath(unit)
    links = target.glob(f"*.wants/{unit.name}")
    return [link for link in links if link.is_symlink() and os.path.realpath(link) == real]
