"""``install-hook``, ``install-mcp``, ``install-service`` and the ``uninstall-`` of each.

An uninstall undoes its installer and puts back what the installer kept aside
(``*.bak-<time>``); ``install-service`` checks the serve arguments it is given first.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from memoryd.cli.serve import checked_serve_args

SETTINGS_HELP = (
    "settings file (default: $CLAUDE_CONFIG_DIR/settings.json or ~/.claude/settings.json)"
)
CODEX_HELP = "Codex config file (default: $CODEX_HOME/config.toml or ~/.codex/config.toml)"
UNIT_DIR_HELP = "default ~/.config/systemd/user"


def register(sub: Any) -> None:
    for command, about, agent, agent_about, flag, flag_help, handler in (
        (
            "install-hook",
            "add memoryd's hook to an agent's settings",
            "claude-code",
            "merge into Claude Code's settings.json",
            "--settings",
            SETTINGS_HELP,
            cmd_hook_claude_code,
        ),
        (
            "uninstall-hook",
            "take memoryd's hook out of an agent's settings",
            "claude-code",
            "Claude Code's settings.json",
            "--settings",
            SETTINGS_HELP,
            cmd_hook_claude_code,
        ),
        (
            "install-mcp",
            "add memoryd's MCP server to an agent's config",
            "codex",
            "add [mcp_servers.memoryd] to Codex's config.toml",
            "--config",
            CODEX_HELP,
            cmd_mcp_codex,
        ),
        (
            "uninstall-mcp",
            "take memoryd's MCP server out of an agent's config",
            "codex",
            "remove [mcp_servers.memoryd] from Codex's config",
            "--config",
            CODEX_HELP,
            cmd_mcp_codex,
        ),
    ):
        agents = sub.add_parser(command, help=about).add_subparsers(
            dest="agent", required=True, metavar="AGENT"
        )
        a = agents.add_parser(agent, help=agent_about)
        a.add_argument(flag, type=Path, default=None, help=flag_help)
        a.set_defaults(handler=handler)

    s = sub.add_parser("install-service", help="install the systemd user units")
    s.add_argument("--unit-dir", type=Path, default=None, help=UNIT_DIR_HELP)
    s.add_argument(
        "serve_args",
        nargs=argparse.REMAINDER,
        help="extra arguments for `memoryd serve` (after --)",
    )
    s.set_defaults(handler=cmd_install_service)

    s = sub.add_parser("uninstall-service", help="remove the systemd user units")
    s.add_argument("--unit-dir", type=Path, default=None, help=UNIT_DIR_HELP)
    s.set_defaults(handler=cmd_uninstall_service)


# The installers are imported by their commands, not by `memoryd completion` (run by each shell).


def cmd_hook_claude_code(args: argparse.Namespace) -> int:
    from memoryd.integrations import install  # noqa: PLC0415

    settings = args.settings or install.default_settings()
    if args.command == "uninstall-hook":
        print(install.uninstall_claude_code(settings).report())
        return 0
    print(install.install_claude_code(settings).report(os.getcwd()))
    if (split := install.hook_in_one_config_only()) is not None:
        print(f"memoryd: warning: {split}", file=sys.stderr)
    return 0


def cmd_mcp_codex(args: argparse.Namespace) -> int:
    from memoryd.integrations import codex  # noqa: PLC0415

    change = codex.install if args.command == "install-mcp" else codex.uninstall
    print(change(args.config or codex.default_config()).report())
    return 0


def cmd_install_service(args: argparse.Namespace) -> int:
    from memoryd.integrations import systemd_units  # noqa: PLC0415

    extra = checked_serve_args([a for a in args.serve_args if a != "--"])
    for unit in systemd_units.install(args.unit_dir, extra):
        if unit.outcome == "unchanged":
            print(f"{unit.path} is up to date")
            continue
        print(f"wrote {unit.path}")
        if unit.backup is not None:
            print(f"  your previous copy is saved as {unit.backup}; what changed:")
            print("\n".join(f"    {line}" for line in unit.changes))
    print("enable and start it with:")
    print("  systemctl --user daemon-reload")
    print("  systemctl --user enable --now memoryd.socket memoryd.service")
    if extra:
        print(f"(serve arguments: {shlex.join(extra)})")
    sys.stdout.flush()
    return 0


def cmd_uninstall_service(args: argparse.Namespace) -> int:
    from memoryd.integrations import systemd_units  # noqa: PLC0415

    changed = False
    for unit in systemd_units.uninstall(args.unit_dir):
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
