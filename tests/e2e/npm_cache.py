"""Agent CLIs (and the Node.js they want) pinned, installed from the npm registry into .cache/.

Everything comes from the npm registry and nothing else: the CLIs, and when
a CLI wants a newer Node.js than the machine's, the official Node.js binary
as the registry ships it (the package ``node-<platform>-<arch>``, which the
``node`` package installs too). A run skips, saying why, only when the
registry cannot be reached (or ships no Node.js for this platform); any
other failure to install fails it.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from isolation import USER_ENV

CACHE = Path(__file__).resolve().parents[2] / ".cache"
INSTALL_TIMEOUT_S = 900
NODE_22 = "22.23.5"
"""The Node.js 22 release installed when the machine's Node.js is older."""
_OFFLINE_HINTS = ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT", "ECONNRESET", "network")


def npm_install(spec: str, folder: Path, node_dir: Path | None = None, why: str = "") -> None:
    """``npm install spec`` into ``folder`` (with ``node_dir``'s Node.js first on PATH);
    ``why`` says in a skip what the package was wanted for."""
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail(f"npm is not on PATH: the end-to-end tests install {spec} with it")
    folder.mkdir(parents=True, exist_ok=True)
    env = dict(USER_ENV)  # npm's own config (registry, cache) is the user's; memoryd is not run
    if node_dir is not None:
        env["PATH"] = f"{node_dir}{os.pathsep}{env.get('PATH', '')}"
    flags = ["--no-audit", "--no-fund", "--no-save", "--loglevel=error"]
    done = subprocess.run(
        [npm, "install", "--prefix", str(folder), *flags, spec],
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_S,
        env=env,
    )
    if done.returncode != 0:
        if any(hint in done.stderr for hint in _OFFLINE_HINTS):
            pytest.skip(
                f"the npm registry cannot be reached, so {spec}{why} is not installed:\n"
                f"{done.stderr.strip()[-600:]}"
            )
        pytest.fail(f"npm install {spec} failed:\n{done.stderr[-2000:]}")


def cached_binary(
    package: str,
    version: str,
    binary: str,
    works: Callable[[Path], bool],
    node_dir: Path | None = None,
    postinstall: Callable[[Path], None] | None = None,
) -> Path:
    """``binary`` of ``package@version``, installed into ``.cache/<name>/<version>`` if missing.

    ``postinstall(package folder)`` runs when the binary does not work after
    the install (npm 11 may hold a package's install script back).
    """
    folder = CACHE / package.rsplit("/", 1)[-1] / version
    path = folder / "node_modules" / ".bin" / binary
    if works(path):
        return path
    npm_install(f"{package}@{version}", folder, node_dir)
    if not works(path) and postinstall is not None:
        postinstall(folder / "node_modules" / package)
    assert works(path), f"{path} does not run as {package} {version}"
    return path


def node_major(node: str | None) -> int:
    """The major version of the ``node`` binary at ``node`` (0 when it does not run)."""
    if node is None:
        return 0
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return int(out.stdout.strip().lstrip("v").split(".")[0] or 0) if out.returncode == 0 else 0


def node_dir(major: int) -> Path:
    """A folder holding a ``node`` of at least ``major``: the machine's, else one from npm."""
    system = shutil.which("node")
    if node_major(system) >= major:
        return Path(system or "").parent
    if major > 22:
        pytest.skip(f"Node.js {major} is wanted; only {NODE_22} is brought from npm here")
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine().lower()
    )
    if sys.platform not in ("linux", "darwin") or arch is None:
        pytest.skip(f"no Node.js {major} package on npm for {sys.platform} {platform.machine()}")
    package = f"node-{sys.platform}-{arch}"
    folder = CACHE / "node" / NODE_22
    found = folder / "node_modules" / package / "bin"
    if node_major(str(found / "node")) != major:
        wanted = f" (Node.js {major}, which a CLI under test declares; this machine has older)"
        npm_install(f"{package}@{NODE_22}", folder, why=wanted)
    if node_major(str(found / "node")) != major:
        pytest.fail(f"{found / 'node'} from npm's {package}@{NODE_22} does not run")
    return found
