"""``memoryd uninstall-service``: remove the systemd user units that install-service wrote.

The inverse of :mod:`memoryd.daemon.units`, and as careful:

* a unit ``install-service`` had replaced left ``<unit>.bak-<time>``: the
  newest such copy is put back, so the unit is what it was before;
* a unit without a backup is removed, and so are the ``*.wants/`` links that
  ``systemctl enable`` made to it; one edited since it was installed is first
  copied to a backup, so no edit is lost;
* a unit that is not ours (no ``memoryd serve`` in it) is left alone.

It does not call systemctl: a running service keeps running until
``systemctl --user stop``, and ``daemon-reload`` forgets the removed files;
the command prints both, as install-service prints its enable commands.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from memoryd.daemon.units import UNITS, render, user_unit_dir
from memoryd.integrations.install import backup_copy

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
