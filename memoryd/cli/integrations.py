"""``memoryd hook``, ``install-hook``, ``install-mcp`` and ``mcp``: agent integrations.

The hook's handler is the one place in the CLI that swallows every error: a
Claude Code hook must exit 0 and stay silent (stderr included) when it has
nothing to add; ``hook_main`` has logged why where the user asked for logs.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from memoryd.cli.common import add_codex_config_option, add_settings_option, add_socket_options


def register(sub: Any) -> None:
    h = sub.add_parser("hook", help="run as an agent hook (reads the event on stdin)")
    agents = h.add_subparsers(dest="agent", required=True, metavar="AGENT")
    cc = agents.add_parser("claude-code", help="Claude Code UserPromptSubmit / SessionStart hook")
    cc.add_argument("--dir", help="memory directory (default: the project's Claude Code memory)")
    cc.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="the whole hook's time budget in seconds, from its start (default 2)",
    )
    cc.add_argument(
        "--log-file",
        default=None,
        help="append diagnostics here as JSON lines (default: $MEMORYD_HOOK_LOG; none)",
    )
    add_socket_options(cc, starts=False)
    cc.set_defaults(handler=cmd_hook_claude_code)

    i = sub.add_parser("install-hook", help="add memoryd's hook to an agent's settings")
    targets = i.add_subparsers(dest="agent", required=True, metavar="AGENT")
    ic = targets.add_parser("claude-code", help="merge into Claude Code's settings.json")
    add_settings_option(ic)
    ic.set_defaults(handler=cmd_install_claude_code)

    im = sub.add_parser("install-mcp", help="add memoryd's MCP server to an agent's config")
    mcp_targets = im.add_subparsers(dest="agent", required=True, metavar="AGENT")
    add_codex_config_option(
        mcp_targets.add_parser("codex", help="add [mcp_servers.memoryd] to Codex's config.toml")
    ).set_defaults(handler=cmd_install_mcp_codex)

    m = sub.add_parser("mcp", help="serve the memory tools over MCP on stdin/stdout")
    add_socket_options(m, starts=False)
    m.set_defaults(handler=cmd_mcp)


def cmd_hook_claude_code(args: argparse.Namespace) -> int:
    # Imported per command, so that other commands do not load the hook.
    from memoryd.integrations import claude_code  # noqa: PLC0415

    timeout = claude_code.DEFAULT_TIMEOUT if args.timeout is None else args.timeout
    options = claude_code.HookOptions(
        directory=args.dir, timeout=max(0.1, timeout), socket=args.socket, log_file=args.log_file
    )

    claude_code.hook_main(options)
    # Out at once: the interpreter's teardown (tens of ms on a loaded machine)
    # would only spend what is left of the budget Claude Code is waiting out.
    sys.stdout.flush()
    os._exit(0)


def cmd_install_claude_code(args: argparse.Namespace) -> int:
    from memoryd.integrations import install  # noqa: PLC0415

    settings = args.settings or install.default_settings()
    print(install.install_claude_code(settings).report(os.getcwd()))
    if (split := install.hook_in_one_config_only()) is not None:
        print(f"memoryd: warning: {split}", file=sys.stderr)
    return 0


def cmd_install_mcp_codex(args: argparse.Namespace) -> int:
    from memoryd.integrations import codex  # noqa: PLC0415

    print(codex.install(args.config or codex.default_config()).report())
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    from memoryd.integrations import mcp_server  # noqa: PLC0415

    mcp_server.serve(args.socket)
    return 0
