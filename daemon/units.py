"""Install the systemd user units shipped in ``systemd/``.

The shipped units start ``%h/.local/bin/memoryd``; the installed copy points
``ExecStart`` at the memoryd that runs this command, so a virtualenv or pipx
install works without editing anything.
"""

from __future__ import annotations

import os
import shlex
import sys
from importlib import resources
from pathlib import Path

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


def install(target: Path | None = None, extra_args: list[str] | None = None) -> list[Path]:
    """Write both units into ``target`` (default the user unit dir); return their paths."""
    target = target or user_unit_dir()
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for name in UNITS:
        path = target / name
        path.write_text(render(name, extra_args or []), encoding="utf-8")
        written.append(path)
    return written
