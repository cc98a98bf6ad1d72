"""``install-service`` and ``uninstall-service``: the systemd user units, written and removed.

The shipped units start ``%h/.local/bin/memoryd``; the installed copy points
``ExecStart`` at the memoryd that runs this command, so a virtualenv or pipx
install works without editing anything.

A unit the user edited is never lost: an installed file that differs from the
new text is first copied to ``<unit>.bak-<time>`` (as ``install-hook`` does
for Claude Code's settings), and the changed lines are reported. Removal is
the inverse, and as careful:

* a unit ``install-service`` had replaced left ``<unit>.bak-<time>``: the
  newest such copy is put back, so the unit is what it was before;
* a unit without a backup is removed, and so are the ``*.wants/`` links that
  ``systemctl enable`` made to it; one edited since it was installed is first
  copied to a backup, so no edit is lost;
* a unit that is not ours (no ``memoryd serve`` in it) is left alone.

Neither calls systemctl: the commands print what to run (enable; stop and
``daemon-reload``).
"""

from __future__ import annotations

import difflib
import os
import shlex
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from memoryd.integrations.install import backup_copy

UNITS = ("memoryd.service", "memoryd.socket")


def unit_text(name: str) -> str:
    return resources.files("memoryd.systemd").joinpath(name).read_text(encoding="utf-8")


def exec_start(extra_args: list[str]) -> str:
    cmd = [sys.executable, "-m", "memoryd", "serve", *extra_args]
    return "ExecStart=" + " ".join(shlex.quote(c) for c in cmd)


def render(name: str, extra_args: list[str]) -> str:
    lines = unit_text(name).splitlines()
    out = [exec_start(extra_args) if line.startswith("ExecStart=") else line for line in lines]
    return "\n".join(out) + "\n"


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


def install(target: Path | None = None, extra_args: list[str] | None = None) -> list[UnitWrite]:
    """Write both units into ``target`` (default the user unit dir), backing up edited ones."""
    target = target or user_unit_dir()
    target.mkdir(parents=True, exist_ok=True)
    done = []
    for name in UNITS:
        path = target / name
        text = render(name, extra_args or [])
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


MARKER = "memoryd serve"
"""What every unit install-service writes has in it (the ExecStart, or Also= for the socket)."""


@dataclass(frozen=True)
class UnitRemoval:
    """What happened to one unit: ``absent``, ``foreign``, ``restored``, ``removed``."""

    path: Path
    outcome: str
    backup: Path | None = None
    links: tuple[Path, ...] = ()
    edited: bool = False


def uninstall(target: Path | None = None) -> list[UnitRemoval]:
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
    backups = sorted(target.glob(f"{name}.bak-*"), reverse=True)
    if backups:
        os.replace(backups[0], path)
        return UnitRemoval(path, "restored", backups[0])
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
    found = []
    for link in target.glob(f"*.wants/{unit.name}"):
        if link.is_symlink() and Path(os.path.realpath(link)) == Path(os.path.realpath(unit)):
            found.append(link)
    return found
