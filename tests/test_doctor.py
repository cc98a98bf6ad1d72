"""``memoryd doctor``: every check on a healthy setup, then each thing it must notice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from daemon_fixtures import DaemonProc, write_memory
from isolation import skip_if_user_runtime

from memoryd import __version__
from memoryd.cli import main
from memoryd.integrations.install import install_claude_code
from memoryd.integrations.systemd_units import install


def doctor(env: dict[str, str], *extra: str) -> tuple[int, dict[str, dict[str, str]], str]:
    """``memoryd doctor --json``: the exit status, the checks by name, and the text form."""
    argv = [sys.executable, "-m", "memoryd", "doctor", *extra]
    done = subprocess.run([*argv, "--json"], env=env, capture_output=True, text=True, timeout=60)
    text = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60).stdout
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    return done.returncode, checks, text


def test_a_healthy_setup_is_all_ok(make_daemon: Callable[..., DaemonProc], tmp_path: Path) -> None:
    root = tmp_path / "memory"
    write_memory(root / "feedback_a.md", "a memory")
    d = make_daemon(roots=[root])
    env = {**d.env, "MEMORYD_SOCKET": str(d.socket), "MEMORYD_DB": str(d.db)}
    (d.home / "run").mkdir(mode=0o700, exist_ok=True)
    install_claude_code(d.home / "claude" / "settings.json")
    install(d.home / "config" / "systemd" / "user", [])
    code, checks, text = doctor(env)
    assert code == 0
    assert {name: c["status"] for name, c in checks.items()} == dict.fromkeys(checks, "ok"), text
    assert d.proc is not None
    assert f"daemon {__version__} (pid {d.proc.pid}, ready)" in checks["versions"]["detail"]
    assert checks["socket"]["detail"] == f"{d.socket} (chosen by $MEMORYD_SOCKET): a daemon answers"
    assert "1 folder(s) under 1 root(s)" in checks["inotify"]["detail"]
    assert f"{d.db}: intact, schema " in checks["index"]["detail"]
    assert "running this installation" in checks["claude-code hook"]["detail"]
    assert "running this installation" in checks["systemd units"]["detail"]
    assert text.splitlines()[0].startswith("ok    versions")


def test_doctor_names_what_is_wrong(tmp_path: Path) -> None:
    skip_if_user_runtime()  # its environment has no XDG_RUNTIME_DIR
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "XDG_"))}
    env.update(HOME=str(home), CLAUDE_CONFIG_DIR=str(home / "claude"))
    (home / ".config" / "memoryd").mkdir(parents=True)
    (home / ".config" / "memoryd" / "config.yaml").write_text("colour: blue\n")
    state = home / ".local" / "state" / "memoryd"
    state.mkdir(parents=True)
    (state / "index.db").write_bytes(b"this is not a database" * 100)
    settings = home / "claude" / "settings.json"
    install_claude_code(settings, command="/opt/old-venv/bin/python -m memoryd hook claude-code")
    units = home / ".config" / "systemd" / "user"
    install(units, [])
    service = units / "memoryd.service"
    service.write_text(service.read_text().replace(sys.executable, "/opt/old-venv/bin/python"))
    code, checks, text = doctor(env)
    assert code == 1
    status: dict[str, Any] = {name: c["status"] for name, c in checks.items()}
    assert status == {
        "versions": "warn",
        "socket": "warn",
        "XDG_RUNTIME_DIR": "warn",
        "inotify": "ok",
        "index": "fail",
        "config": "fail",
        "claude-code hook": "warn",
        "systemd units": "warn",
        "hook reach": "ok",
    }
    assert "no daemon answers" in checks["versions"]["detail"]
    assert "$XDG_RUNTIME_DIR is unset and there is no /run/user/" in checks["socket"]["detail"]
    assert "unknown key(s): colour" in checks["config"]["detail"]
    assert "runs /opt/old-venv/bin/python -m memoryd hook" in checks["claude-code hook"]["detail"]
    assert "runs /opt/old-venv/bin/python -m memoryd serve" in checks["systemd units"]["detail"]
    assert "FAIL  config" in text


def test_an_unsafe_runtime_dir_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o777)
    runtime.chmod(0o777)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("MEMORYD_SOCKET", str(tmp_path / "none.sock"))
    monkeypatch.setenv("HOME", str(tmp_path))
    assert main(["doctor"]) == 1
    line = next(x for x in capsys.readouterr().out.splitlines() if "XDG_RUNTIME_DIR" in x)
    assert line.startswith("FAIL") and "mode 777: not private" in line
