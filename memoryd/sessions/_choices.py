"""The values a session file's ``mode`` and ``status`` may take.

Apart from :mod:`memoryd.sessions.format` (which needs YAML), so a client
such as ``memoryd mcp`` can list them in its tool schemas without loading it.
"""

from __future__ import annotations

MODES = ("architect", "express")
STATUSES = ("in-progress", "paused", "completed")
