"""``memoryd uninstall-hook claude-code`` and ``memoryd uninstall-service``.

Each undoes its installer and puts back what the installer had kept aside
(``*.bak-<time>``); see :mod:`memoryd.integrations.uninstall` and
:mod:`memoryd.daemon.unit_removal` for exactly what is removed and when.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from memoryd._cli_common import add_settings_option


def register(sub: Any) -> None:
    h = sub.add_parser("uninstall-hook", help="take memoryd's hook out of an agent's settings")
    agents = h.add_subparsers(dest="agent", required=True, metavar="AGENT")
    cc = agents.add_parser("claude-code", help="Claude Code's settings.json")
    add_settings_option(cc)
    cc.set_defaults(handler=cmd_uninstall_claude_code)

    s = sub.add_parser("uninstall-service", help="remove the systemd user units")
    s.add_argument("--unit-dir", type=Path, default=None, help="default ~/.config/systemd/user")
    s.set_defaults(handler=cmd_uninstall_service)


def cmd_uninstall_claude_code(args: argparse.Namespace) -> int:
    from memoryd.integrations import install, uninstall  # noqa: PLC0415

    settings = args.settings or install.default_settings()
    print(uninstall.uninstall_claude_code(settings).report())
    return 0


def cmd_uninstall_service(args: argparse.Namespace) -> int:
    from memoryd.daemon.unit_removal import uninstall  # noqa: PLC0415

    changed = False
    for unit in uninstall(args.unit_dir):
        if unit.outcome == "absent":
            print(f"{unit.path} is not installed")
        elif unit.outcome == "foreign":
            print(f"{unit.path} is not memoryd's; left as is")
        elif unit.outcome == "restored":
            changed = True
            print(f"restored {unit.path} as it was before install-service, from {unit.backup}")
        else:
            changed = True
            print(f"removed {unit.path}")
            for link in unit.links:
                print(f"  and its enable link {link}")
            if unit.backup is not None:
                print(f"  you had edited it: a copy is kept as {unit.backup}")
    if changed:
        print("a running service keeps running until it is stopped; then reload systemd:")
        print("  systemctl --user stop memoryd.socket memoryd.service")
        print("  systemctl --user daemon-reload")
    return 0
