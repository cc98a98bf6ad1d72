"""Shared pytest fixtures."""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest

from memoryd import cli
from memoryd.indexer.store import IndexStore
from memoryd.ipc.server import Server

# isolation: HOME, XDG_* and MEMORYD_* point into a folder of the run's own before
# any test runs, so no test reaches the user's daemon, config or ~/.claude.
# Real servers as fixtures: a memoryd daemon subprocess on a temp socket, and a
# local HTTP server speaking the Anthropic Messages API.
pytest_plugins = ["isolation", "daemon_fixtures", "fake_messages_api", "hook_project"]

# The end-to-end tests drive the real Claude Code CLI: `make e2e` runs them
# (with MEMORYD_E2E=1), `make test` does not collect them.
collect_ignore = [] if os.environ.get("MEMORYD_E2E") == "1" else ["e2e"]

# ---------------------------------------------------------------------------
# Tiers. A test is a unit test (marked `unit`; `make check` runs `-m unit`)
# when it cannot start a process or a server: none of its fixtures does
# (SERVER_FIXTURES, and every fixture built on them) and its module imports
# nothing that does (:func:`starters`; the CLI starts a daemon when none
# runs). Found from the tests themselves, so no test carries the mark by hand
# and a new daemon test never lands in the fast tier.
# ---------------------------------------------------------------------------
SERVER_FIXTURES = frozenset(
    {"make_daemon", "shared_daemon", "fake_messages_api", "fake_openai_api"}
)


def starters(config: pytest.Config) -> set[int]:
    """What a test module imports to start a process or a server itself."""
    fixtures = config.pluginmanager.get_plugin("daemon_fixtures")
    assert fixtures is not None, "daemon_fixtures is one of pytest_plugins"
    held = (subprocess, fixtures.DaemonProc, fixtures.module_daemon, Server, cli, cli.main)
    return {id(obj) for obj in held}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    starting = starters(config)
    for item in items:
        module = getattr(item, "module", None)
        held = vars(module).values() if module is not None else ()
        fixtures = getattr(item, "fixturenames", ())
        if SERVER_FIXTURES.isdisjoint(fixtures) and not any(id(v) in starting for v in held):
            item.add_marker(pytest.mark.unit)


# ---------------------------------------------------------------------------
# Foundation fixtures (indexer / index store / `memoryd index` tests).
# Used by test_parser.py, test_index_store.py, test_sync.py, test_cli_index.py
# and the in-process selector tests.
# ---------------------------------------------------------------------------
CORPUS = Path(__file__).resolve().parent / "fixtures" / "coding-memories"
"""A small copy of the development corpus (see its SOURCE.txt); bench/ reads the full one."""
NOBODY_UID = 65534


class MakeMemory(Protocol):
    def __call__(
        self,
        filename: str,
        description: str = ...,
        *,
        name: str | None = ...,
        type: str = ...,
        body: str = ...,
        directory: Path | None = ...,
    ) -> Path: ...


@pytest.fixture
def memdir(tmp_path: Path) -> Path:
    """An empty memory directory."""
    path = tmp_path / "memory"
    path.mkdir()
    return path


@pytest.fixture
def db_file(tmp_path: Path) -> Path:
    return tmp_path / "state" / "index.db"


@pytest.fixture
def store(db_file: Path) -> Iterator[IndexStore]:
    """A real SQLite index in a temp dir, closed after the test."""
    st = IndexStore(db_file)
    try:
        yield st
    finally:
        st.close()


@pytest.fixture
def make_memory(memdir: Path) -> MakeMemory:
    """Write a well-formed memory file (into ``memdir`` unless told otherwise)."""

    def make(
        filename: str,
        description: str = "a memory about testing",
        *,
        name: str | None = None,
        type: str = "feedback",
        body: str = "Do the thing.\n\n**Why:** reasons.\n\n**How to apply:** always.\n",
        directory: Path | None = None,
    ) -> Path:
        folder = directory or memdir
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / filename
        title = name or filename.removesuffix(".md").replace("_", " ")
        path.write_text(
            f"---\nname: {title}\ndescription: {description}\ntype: {type}\n---\n{body}",
            encoding="utf-8",
        )
        return path

    return make


@pytest.fixture
def world_tmp() -> Iterator[Path]:
    """A temp dir any user can enter and write (pytest's tmp_path is 0700 for root)."""
    path = Path(tempfile.mkdtemp(prefix="memoryd-test-"))
    path.chmod(0o777)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def run_unprivileged(fn: Callable[[], Any]) -> Any:
    """Run ``fn`` where permission bits are enforced and return its (picklable) result.

    As a normal user that is this process. As root (CI containers), permission
    bits do not stop reads, so ``fn`` runs in a forked child that has dropped to
    uid ``nobody`` first: a real EACCES, with every module already imported.
    """
    if os.geteuid() != 0:
        return fn()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        code = 0
        try:
            os.close(read_fd)
            os.setgid(NOBODY_UID)
            os.setuid(NOBODY_UID)
            payload = pickle.dumps(("ok", fn()))
        except BaseException as exc:
            payload = pickle.dumps(("error", f"{type(exc).__name__}: {exc}"))
            code = 1
        with os.fdopen(write_fd, "wb") as out:
            out.write(payload)
        os._exit(code)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as inp:
        data = inp.read()
    os.waitpid(pid, 0)
    status, value = pickle.loads(data)
    if status != "ok":
        if "Operation not permitted" in value:
            pytest.skip(f"running as root without CAP_SETUID, cannot drop to nobody: {value}")
        raise AssertionError(f"unprivileged child failed: {value}")
    return value


# --- end of foundation fixtures ---------------------------------------------
