"""The real Codex CLI (``@openai/codex``, pinned), installed from the npm registry into .cache/.

The package is a small Node.js launcher plus the native binary, which npm
installs as a platform optional dependency (``@openai/codex-linux-x64`` ...).
``make e2e`` runs ``codex exec`` offline: the model provider is a loopback
fake of the Responses API (:mod:`fake_responses_api`), which also stands as
the HTTP(S) proxy and refuses every tunnel; the features that fetch from the
network by themselves (plugins, remote plugins, apps), analytics, feedback
and the update check are switched off in the config. HOME, CODEX_HOME and the XDG folders are a
temp dir's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from npm_cache import cached_binary

VERSION = "0.171.0"
PACKAGE = "@openai/codex"
API_KEY_VAR = "MEMORYD_E2E_FAKE_KEY"


def installed() -> Path:
    """The ``codex`` launcher of the pinned version, installed now if the cache lacks it."""

    def works(binary: Path) -> bool:
        try:
            out = subprocess.run(
                [str(binary), "--version"], capture_output=True, text=True, timeout=60
            ).stdout
        except (OSError, subprocess.TimeoutExpired):
            return False
        return out.strip() == f"codex-cli {VERSION}"

    return cached_binary(PACKAGE, VERSION, "codex", works)


def offline_config(api_url: str) -> str:
    """A ``config.toml`` whose only model provider is the fake at ``api_url``."""
    return f"""model = "gpt-e2e-fake"
model_provider = "e2e_fake"
approval_policy = "never"
sandbox_mode = "read-only"
check_for_update_on_startup = false

[analytics]
enabled = false

[feedback]
enabled = false

[features]
plugins = false
remote_plugin = false
apps = false

[model_providers.e2e_fake]
name = "e2e fake"
base_url = "{api_url}"
wire_api = "responses"
env_key = "{API_KEY_VAR}"
request_max_retries = 0
stream_max_retries = 0
"""


@dataclass
class Codex:
    """One isolated user of the CLI: a home with its CODEX_HOME, the fake API as network."""

    binary: Path
    home: Path
    proxy: str
    socket: Path

    @property
    def codex_home(self) -> Path:
        return self.home / ".codex"

    def env(self) -> dict[str, str]:
        home = str(self.home)
        node = os.path.dirname(shutil.which("node") or "/usr/bin/node")
        return {
            "HOME": home,
            "USER": os.environ.get("USER", "e2e"),
            "PATH": f"{node}:/usr/local/bin:/usr/bin:/bin",
            "TERM": "dumb",
            "CODEX_HOME": str(self.codex_home),
            "XDG_CONFIG_HOME": f"{home}/.config",
            "XDG_STATE_HOME": f"{home}/.local/state",
            "XDG_DATA_HOME": f"{home}/.local/share",
            "XDG_CACHE_HOME": f"{home}/.cache",
            API_KEY_VAR: "sk-e2e-not-a-real-key",
            "HTTPS_PROXY": self.proxy,
            "HTTP_PROXY": self.proxy,
            "NO_PROXY": "127.0.0.1,localhost",
            # Reaches `memoryd mcp` only through the env_vars install-mcp writes.
            "MEMORYD_SOCKET": str(self.socket),
        }

    def run(
        self, cwd: Path, *args: str, timeout: float = 180
    ) -> tuple[subprocess.CompletedProcess[str], float]:
        """``codex ARGS`` in ``cwd``; the finished process and its wall time in seconds."""
        started = time.monotonic()
        done = subprocess.run(
            [str(self.binary), *args],
            cwd=cwd,
            env=self.env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return done, time.monotonic() - started
