"""``memoryd doctor``'s checks of what is installed: the Claude Code hook and the systemd units.

Both are installed by memoryd with the interpreter that ran the installer
(``sys.executable``); after an upgrade into another virtualenv, or a
``pipx reinstall``, they may still run the old one. Each check says whether
the piece is there and whether it runs *this* installation.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from typing import Any

from memoryd.doctor import FAIL, OK, WARN, Check, Facts

HOOK = "claude-code hook"
UNITS_CHECK = "systemd units"


def _runs_this(command: str) -> bool:
    """Whether ``command`` starts with this interpreter (what the installers write).

    Two virtualenvs share the real interpreter their ``bin/python`` links to,
    so the folder the command names must be this one's too.
    """
    try:
        first = shlex.split(command)[0]
    except (ValueError, IndexError):
        return False
    mine = sys.executable
    same_folder = os.path.dirname(os.path.abspath(first)) == os.path.dirname(os.path.abspath(mine))
    return same_folder and os.path.realpath(first) == os.path.realpath(mine)


def _hook_commands(doc: object, events: tuple[str, ...], marker: str) -> dict[str, list[str]]:
    """Per event, the commands in ``doc``'s hooks that run memoryd's hook."""
    hooks = doc.get("hooks") if isinstance(doc, dict) else None
    hooks = hooks if isinstance(hooks, dict) else {}
    found: dict[str, list[str]] = {}
    for event in events:
        listed = hooks.get(event)
        groups: list[Any] = listed if isinstance(listed, list) else []
        entries = [e for g in groups if isinstance(g, dict) for e in g.get("hooks") or []]
        found[event] = [
            str(e["command"])
            for e in entries
            if isinstance(e, dict) and marker in str(e.get("command", ""))
        ]
    return found


def check_hook(facts: Facts) -> Check:
    from memoryd.integrations import install  # noqa: PLC0415

    settings = install.default_settings()
    todo = "`memoryd install-hook claude-code`"
    split = install.hook_in_one_config_only()
    try:
        doc = json.loads(settings.read_text(encoding="utf-8") or "{}")
    except FileNotFoundError:
        return Check(HOOK, WARN, split or f"not installed (no {settings}); {todo}")
    except (OSError, ValueError) as exc:
        return Check(HOOK, FAIL, f"{settings} cannot be read as JSON: {exc}")
    commands = _hook_commands(doc, install.EVENTS, install.HOOK_MARKER)
    missing = [event for event, found in commands.items() if not found]
    if len(missing) == len(commands):
        return Check(HOOK, WARN, split or f"not in {settings}; {todo}")
    others = sorted({c for found in commands.values() for c in found if not _runs_this(c)})
    if others:
        return Check(HOOK, WARN, f"in {settings} but runs {others[0]}, not this one; {todo}")
    if missing:
        return Check(HOOK, WARN, f"in {settings} without {', '.join(missing)}; {todo}")
    if split is not None:
        return Check(HOOK, WARN, split)
    return Check(HOOK, OK, f"in {settings} ({', '.join(commands)}), running this installation")


def check_units(facts: Facts) -> Check:
    from memoryd.integrations.systemd_units import UNITS, user_unit_dir  # noqa: PLC0415

    target = user_unit_dir()
    service = target / UNITS[0]
    todo = "`memoryd install-service`"
    try:
        text = service.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Check(UNITS_CHECK, WARN, f"not installed in {target}; {todo}")
    except OSError as exc:
        return Check(UNITS_CHECK, FAIL, f"{service}: {exc.strerror}")
    starts = [line.partition("=")[2] for line in text.splitlines() if line.startswith("ExecStart=")]
    absent = [name for name in UNITS if not (target / name).exists()]
    enabled = [name for name in UNITS if list(target.glob(f"*.wants/{name}"))]
    state = f"enabled: {', '.join(enabled)}" if enabled else "not enabled"
    if absent:
        return Check(UNITS_CHECK, WARN, f"{', '.join(absent)} missing in {target}; {todo}")
    if not starts or not _runs_this(starts[0]):
        shown = starts[0] if starts else "no ExecStart"
        return Check(UNITS_CHECK, WARN, f"{service} runs {shown}, not this one; {todo}")
    return Check(UNITS_CHECK, OK, f"{target} ({state}), running this installation")
