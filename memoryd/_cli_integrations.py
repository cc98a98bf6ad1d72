"""``memoryd hook``, ``memoryd install-hook`` and ``memoryd mcp``: agent integrations.

The hook's handler is the one place in the CLI that swallows every error: a
Claude Code hook must exit 0 and stay silent when it has nothing to add, and
``hook_main`` has already logged why.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from memoryd._cli_common import add_settings_option
from memoryd._cli_daemon import add_socket_options
from memoryd.errors import ConfigError


def register(sub: Any) -> None:
    h = sub.add_parser("hook", help="run as an agent hook (reads the event on stdin)")
    agents = h.add_subparsers(dest="agent", required=True, metavar="AGENT")
    cc = agents.add_parser("claude-code", help="Claude Code UserPromptSubmit / SessionStart hook")
    cc.add_argument("--dir", help="memory directory (default: the project's Claude Code memory)")
    cc.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="give up silently after this many seconds (default 2)",
    )
    add_socket_options(cc)
    cc.set_defaults(handler=cmd_hook_claude_code)

    i = sub.add_parser("install-hook", help="add memoryd's hook to an agent's settings")
    targets = i.add_subparsers(dest="agent", required=True, metavar="AGENT")
    ic = targets.add_parser("claude-code", help="merge into Claude Code's settings.json")
    add_settings_option(ic)
    ic.set_defaults(handler=cmd_install_claude_code)

    m = sub.add_parser("mcp", help="serve the memory tools over MCP on stdin/stdout")
    add_socket_options(m)
    m.set_defaults(handler=cmd_mcp)


def cmd_hook_claude_code(args: argparse.Namespace) -> int:
    # Imported per command, so that other commands do not load the hook.
    from memoryd.integrations import claude_code  # noqa: PLC0415

    timeout = claude_code.DEFAULT_TIMEOUT if args.timeout is None else args.timeout
    options = claude_code.HookOptions(
        directory=args.dir, timeout=max(0.1, timeout), socket=args.socket
    )
    output = claude_code.hook_main(sys.stdin.read, options)
    if output is not None:
        json.dump(output, sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
    return 0


def cmd_install_claude_code(args: argparse.Namespace) -> int:
    from memoryd.integrations import install  # noqa: PLC0415

    settings = args.settings or install.default_settings()
    print(install.install_claude_code(settings).report())
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    try:
        from memoryd.integrations import mcp_server  # noqa: PLC0415 - optional, slow import
    except ImportError as exc:
        raise ConfigError(
            f"`memoryd mcp` needs the mcp package ({exc}); install memoryd[mcp]"
        ) from None
    mcp_server.serve(args.socket)
    return 0
