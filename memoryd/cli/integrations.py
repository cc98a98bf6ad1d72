"""``memoryd hook`` and ``memoryd mcp``: the agents' ways in.

The hook is the one command that swallows every error: a Claude Code hook must exit 0
and stay silent when it has nothing to add (``hook_main`` logs why where asked to).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from memoryd.cli.common import add_socket_options


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

    m = sub.add_parser("mcp", help="serve the memory tools over MCP on stdin/stdout")
    add_socket_options(m, starts=False)
    m.set_defaults(handler=cmd_mcp)


def cmd_hook_claude_code(args: argparse.Namespace) -> int:
    from memoryd.integrations import claude_code  # noqa: PLC0415 - mcp does not load the hook

    timeout = claude_code.DEFAULT_TIMEOUT if args.timeout is None else args.timeout
    options = claude_code.HookOptions(
        directory=args.dir, timeout=max(0.1, timeout), socket=args.socket, log_file=args.log_file
    )

    claude_code.hook_main(options)
    # Out at once: the interpreter's teardown would spend what is left of the budget.
    sys.stdout.flush()
    os._exit(0)


def cmd_mcp(args: argparse.Namespace) -> int:
    from memoryd.integrations import mcp_server  # noqa: PLC0415 - the hook does not load MCP

    mcp_server.serve(args.socket)
    return 0
