"""Ready-made bridges between coding agents and the warm daemon.

``claude_code`` is the Claude Code hook (memories injected on every prompt,
the last session on start), ``install`` wires it into Claude Code's
``settings.json`` (both find a project's memory folder the way Claude Code
does, with :mod:`memoryd.claude_folders`), and ``mcp_server`` exposes the
daemon's methods as MCP tools for any MCP client. None of them starts a
daemon: they only talk to one.
"""
