"""Every test run gets a private world: HOME, the XDG folders and memoryd's variables point into it.

Set in ``pytest_configure``, before any test module is imported, so a test
that forgets to isolate itself, and every subprocess a test starts (they
inherit the environment), finds no daemon, socket, index, config, log or
Claude Code folder of the user running the suite: they all resolve under one
temp folder made for the run and removed after it. Only the socket fallbacks
outside HOME (``/run/user/$UID``, ``/tmp/memoryd-$UID``) are left, for a test
that unsets ``XDG_RUNTIME_DIR`` on purpose; :func:`skip_if_user_runtime`
keeps such a test away from a machine where a socket is there.

:data:`USER_ENV` is the environment the run started with: for the test that
proves the isolation, and for tools that are not memoryd (pip, npm) and need
the user's own configuration.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

import pytest

from memoryd import paths

USER_ENV: dict[str, str] = dict(os.environ)
"""The environment as the run started, before :func:`pytest_configure` isolated it."""

DROPPED = ("MEMORYD_", "XDG_", "CLAUDE", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")
"""Prefixes of the variables memoryd (or Claude Code, for the hook) reads; none is inherited."""

KNOBS = ("MEMORYD_E2E", "MEMORYD_REGEX_EXAMPLES")
"""The test suite's own settings, kept."""

_world: list[Path] = []


def isolated_env(base: Path, env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without memoryd's and Claude Code's variables, its folders all under ``base``."""
    out = {k: v for k, v in env.items() if k in KNOBS or not k.startswith(DROPPED)}
    out.update(
        HOME=str(base / "home"),
        XDG_CONFIG_HOME=str(base / "config"),
        XDG_STATE_HOME=str(base / "state"),
        XDG_DATA_HOME=str(base / "data"),
        XDG_CACHE_HOME=str(base / "cache"),
        XDG_RUNTIME_DIR=str(base / "run"),
    )
    for var in ("HOME", "XDG_RUNTIME_DIR"):
        Path(out[var]).mkdir(mode=0o700, exist_ok=True)
    return out


def pytest_configure(config: pytest.Config) -> None:
    # Short: sockets under XDG_RUNTIME_DIR must fit AF_UNIX's 107 bytes.
    base = Path(tempfile.mkdtemp(prefix="memoryd-tests-"))
    _world.append(base)
    isolated = isolated_env(base, USER_ENV)
    os.environ.clear()
    os.environ.update(isolated)


def pytest_unconfigure(config: pytest.Config) -> None:
    while _world:
        shutil.rmtree(_world.pop(), ignore_errors=True)


def user_runtime_sockets() -> list[Path]:
    """The user's sockets a client finds with ``XDG_RUNTIME_DIR`` unset (they live outside HOME)."""
    uid = os.getuid()
    fallbacks = [
        paths.RUN_USER / str(uid) / "memoryd" / "memoryd.sock",
        Path(f"/tmp/memoryd-{uid}/memoryd.sock"),
    ]
    return [s for s in fallbacks if s.exists()]


def skip_if_user_runtime() -> None:
    """Skip a test that unsets ``XDG_RUNTIME_DIR`` where that would lead to the user's daemon."""
    found = user_runtime_sockets()
    if found:
        pytest.skip(
            f"with $XDG_RUNTIME_DIR unset a client here would reach {found[0]}, the user's own"
        )
