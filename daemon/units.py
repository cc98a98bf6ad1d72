"""Install the systemd user units shipped in ``systemd/``.

The shipped units start ``%h/.local/bin/memoryd``; the installed copy points
``ExecStart`` at the memoryd that runs this command, so a virtualenv or pipx
install works without editing anything.

A unit the user edited is never lost: an installed file that differs from the
new text is first copied to ``<unit>.bak-<time>`` (as ``install-hook`` does
for Claude Code's settings), and the changed lines are reported.
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
