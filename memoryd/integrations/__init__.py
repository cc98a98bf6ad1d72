"""Bridges between coding agents and the warm daemon: the Claude Code hook and its
installer, the MCP server, Codex's config, ``why`` and ``eval``. None starts a daemon."""
