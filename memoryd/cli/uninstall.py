"""``memoryd uninstall-hook claude-code``, ``uninstall-mcp codex`` and ``uninstall-service``.

Each undoes its installer and puts back what the installer had kept aside
(``*.bak-<time>``); see :mod:`memoryd.integrations.install` and
:mod:`memoryd.integrations.systemd_units` for exactly what is removed and when.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from memoryd.cli.common import add_codex_config_option, add_settings_option


def register(sub: Any) -> None:
    h = sub.add_parser("uninstall-hook", help="take memoryd's hook out of an agent's settings")
    agents = h.add_subparsers(dest="agent", required=True, metavar="AGENT")
    cc = agents.add_parser("claude-code", help="Claude Code's settings.json")
    add_settings_option(cc)
    cc.set_defaults(handler=cmd_uninstall_claude_code)

    m = sub.add_parser("uninstall-mcp", help="take memoryd's MCP server out of an agent's config")
    mcp_targets = m.add_subparsers(dest="agent", required=True, metavar="AGENT")
    add_codex_config_option(
        mcp_targets.add_parser("codex", help="remove [mcp_servers.memoryd] from Codex's config")
    ).set_defaults(handler=cmd_uninstall_mcp_codex)

    s = sub.add_parser("uninstall-service", help="remove the systemd user units")
    s.add_argument("--unit-dir", type=Path, default=None, help="default ~/.config/systemd/user")
    s.set_defaults(handler=cmd_uninstall_service)


def cmd_uninstall_claude_code(args: argparse.Namespace) -> int:
    from memoryd.integrations import install  # noqa: PLC0415

    settings = args.settings or install.default_settings()
    print(install.uninstall_claude_code(settings).report())
    return 0


def cmd_uninstall_mcp_codex(args: argparse.Namespace) -> int:
    from memoryd.integrations import codex  # noqa: PLC0415

    print(codex.uninstall(args.config or codex.default_config()).report())
    return 0


def cmd_uninstall_service(args: argparse.Namespace) -> int:
    from memoryd.integrations.systemd_units import uninstall  # noqa: PLC0415

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
