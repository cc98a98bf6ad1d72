"""Every test run gets a private world: HOME, the XDG folders and memoryd's variables point into it.

Set in ``pytest_configure``, before any test module is imported, so a test
that forgets to isolate itself, and every subprocess a test starts (they
inherit the environment), finds no daemon, socket, index, config, log or
Claude Code folder of the user running the suite: they all resolve under one
temp folder made for the run and removed after it. Only the socket fallbacks
outside HOME (``/run/user/$UID``, ``/tmp/memoryd-$UID``) are left, for a test
that unsets ``XDG_RUNTIME_DIR`` on purpose; :func:`skip_if_user_runtime`
keeps such a test away from a machine where a socket is there.

Each test then gets runtime and state folders of its own (:func:`own_daemons`):
a CLI command that finds no daemon starts one there, which answers that test
only and is stopped when it ends.

:data:`USER_ENV` is the environment the run started with: for the test that
proves the isolation, and for tools that are not memoryd (pip, npm) and need
the user's own configuration.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator, Mapping
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


STARTER = "MEMORYD_TEST_STARTER"
"""Set to the test's own folder: every daemon a command of the test starts inherits it."""


@pytest.fixture(autouse=True)
def own_daemons(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This test's runtime and state folders; no daemon its commands started outlives it.

    Not for a unit test: it starts no process (tests/conftest.py marks it so).
    """
    if request.node.get_closest_marker("unit") is not None:
        yield
        return
    tmp_path: Path = request.getfixturevalue("tmp_path")
    base = Path(tempfile.mkdtemp(prefix="mdt-"))  # short: AF_UNIX paths hold 107 bytes
    (base / "run").mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(base / "run"))
    monkeypatch.setenv("XDG_STATE_HOME", str(base / "state"))
    monkeypatch.setenv(STARTER, str(base))
    try:
        yield
    finally:
        stop_daemons_of(str(base), str(tmp_path))
        shutil.rmtree(base, ignore_errors=True)


def stop_daemons_of(mark: str, tmp: str) -> None:
    """Stop every ``memoryd serve`` started with ``STARTER=mark`` or on a path under ``tmp``.

    (A test that gives a command an environment of its own drops the mark, not its temp
    folder.) SIGTERM, SIGKILL after 15 s; reaped when a child of this process.
    """
    pids = [
        pid
        for pid, argv in serving()
        if environ_of(pid).get(STARTER) == mark or any(a.startswith(tmp + "/") for a in argv)
    ]
    for pid in pids:
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    for pid in pids:
        while not _gone(pid):
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
            time.sleep(0.02)


def serving() -> list[tuple[int, list[str]]]:
    """Every ``memoryd serve`` process: its pid and its arguments."""
    found = []
    for name in os.listdir("/proc"):
        try:
            argv = Path(f"/proc/{name}/cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:  # not a process, or gone
            continue
        if any("memoryd" in a for a in argv[:3]) and "serve" in argv:
            found.append((int(name), argv))
    return found


def environ_of(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    pairs = (item.decode(errors="replace").partition("=") for item in raw.split(b"\0") if item)
    return {key: value for key, _, value in pairs}


def _gone(pid: int) -> bool:
    """True once ``pid`` has exited: reaped here if it is our child, else gone or a zombie."""
    try:
        return os.waitpid(pid, os.WNOHANG)[0] == pid
    except ChildProcessError:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        return state == "Z"


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
