"""The real Claude Code CLI, pinned, installed from the npm registry into a cache folder.

``make e2e`` runs ``claude -p`` offline: every network setting the CLI has
points at loopback (the fake Messages API, which also stands as the HTTP(S)
proxy and refuses every tunnel), and its telemetry, error reporting,
feature-flag fetches and auto-update are switched off, by the variables the
CLI itself reads (docs/claude-code.md). HOME and the XDG folders are a temp
dir's, so nothing touches the real user's settings.

2.1.197 is the newest 2.1 release whose package declares Node 18+ (2.1.198
and later want Node 22); from 2.1.113 on the package ships a native binary
per platform, which npm installs as an optional dependency, and a postinstall
script that copies it into place (run here, because npm 11 holds install
scripts back until they are approved). :data:`NEWEST` is the newest release
when this was written; its package declares Node 22+, which
:func:`npm_cache.node_dir` brings from the npm registry when the machine's
Node.js is older.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from npm_cache import cached_binary, node_dir

VERSION = "2.1.197"
NEWEST = "2.1.332"
PACKAGE = "@anthropic-ai/claude-code"
NODE_MAJOR = {NEWEST: 22}
"""The Node.js major version a release's package declares, where the machine's may be older."""


def installed(version: str = VERSION) -> tuple[Path, Path | None]:
    """The ``claude`` binary of ``version`` (installed now if the cache lacks it), and the
    folder of the Node.js it wants when that is not the machine's (else None).

    Skips (with the reason) only when the npm registry cannot be reached;
    any other failure to install fails the run.
    """
    node = node_dir(NODE_MAJOR[version]) if version in NODE_MAJOR else None

    def works(binary: Path) -> bool:
        try:
            out = subprocess.run(
                [str(binary), "--version"], capture_output=True, text=True, timeout=60
            ).stdout
        except (OSError, subprocess.TimeoutExpired):
            return False
        return out.startswith(version)

    def postinstall(package: Path) -> None:
        """The package's postinstall (npm may hold it back) puts the native binary in place."""
        setup = subprocess.run(
            [str(node / "node") if node else "node", "install.cjs"],
            cwd=package,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert setup.returncode == 0, setup.stderr

    return cached_binary(PACKAGE, version, "claude", works, node, postinstall), node


@dataclass
class Claude:
    """One isolated user of the CLI: a home, its settings, the fake API as network."""

    binary: Path
    home: Path
    api_url: str
    socket: Path
    node: Path | None = None
    """The folder of the Node.js to put first on PATH (None: the machine's)."""

    def env(self, **extra: str) -> dict[str, str]:
        home = str(self.home)
        node = str(self.node or os.path.dirname(shutil.which("node") or "/usr/bin/node"))
        env = {
            "HOME": home,
            "USER": os.environ.get("USER", "e2e"),
            "PATH": f"{node}:/usr/local/bin:/usr/bin:/bin",
            "TERM": "dumb",
            "XDG_CONFIG_HOME": f"{home}/.config",
            "XDG_STATE_HOME": f"{home}/.local/state",
            "XDG_DATA_HOME": f"{home}/.local/share",
            "XDG_CACHE_HOME": f"{home}/.cache",
            # Every way out goes to loopback: the API, and as proxy the fake
            # (which refuses and records any tunnel).
            "ANTHROPIC_BASE_URL": self.api_url,
            "ANTHROPIC_API_KEY": "sk-ant-e2e-not-a-real-key",
            "HTTPS_PROXY": self.api_url,
            "HTTP_PROXY": self.api_url,
            "NO_PROXY": "127.0.0.1,localhost",
            # No telemetry, error reports, feature-flag fetches or updates.
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_GROWTHBOOK": "1",
            "DO_NOT_TRACK": "1",
            "MEMORYD_SOCKET": str(self.socket),
        }
        return env | extra

    def run(
        self, cwd: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 120
    ) -> tuple[subprocess.CompletedProcess[str], float]:
        """``claude ARGS`` in ``cwd``; the finished process and its wall time in seconds."""
        started = time.monotonic()
        done = subprocess.run(
            [str(self.binary), *args],
            cwd=cwd,
            env=self.env(**(env or {})),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return done, time.monotonic() - started
