"""Staleness through the real daemon: background checks, select, status, check, the hook."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from daemon_fixtures import DaemonProc, wait_until, write_memory
from git_repo import DAY, T0, Repo

from memoryd.claude_folders import memory_folder
from memoryd.errors import InvalidParams

QUERY = "how are invoice tax rounding rules applied?"
BODY = "Invoice tax rounding rules: round each line, then sum. Code: {}."


def _memory(path: Path, cited: str) -> Path:
    write_memory(path, "Invoice tax rounding rules", mtype="project", body=BODY.format(cited))
    os.utime(path, (T0, T0))
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    r = Repo(tmp_path / "checkout")
    r.write("src/billing/tax.py")
    r.write("src/billing/invoice_rounding.py")
    r.commit("initial", when=T0 - DAY)
    return r


def _checked(d: DaemonProc, memdir: Path) -> Callable[[], bool]:
    """True once every citing memory in ``memdir`` shows a verdict in ``list``."""

    def ready() -> bool:
        files = d.call("list", {"dir": str(memdir)})["files"]
        return all(f["staleness"] is not None for f in files)

    return ready


@pytest.fixture
def checked_daemon(make_daemon: Callable[..., DaemonProc], repo: Repo, tmp_path: Path) -> Any:
    """A daemon whose config ties its memory folder to ``repo``; two equally relevant
    memories, one citing a file deleted after it was written."""
    memdir = tmp_path / "memory"
    memdir.mkdir()
    _memory(memdir / "a_rounding_1st.md", "`src/billing/invoice_rounding.py`")
    _memory(memdir / "b_rounding_2nd.md", "`src/billing/tax.py`")
    repo.git("rm", "-q", "src/billing/invoice_rounding.py")
    repo.commit("rounding moved into tax.py", when=T0 + DAY)
    d = make_daemon(roots=[memdir], start=False)
    config = Path(d.env["XDG_CONFIG_HOME"]) / "memoryd" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(f"checkouts:\n  {memdir}: {repo.path}\n")
    d.start()
    wait_until(_checked(d, memdir), timeout=30, what="the background check")
    return d, memdir


def test_select_carries_staleness_and_ranks_a_dead_memory_last(checked_daemon: Any) -> None:
    d, memdir = checked_daemon
    result = d.call("select", {"query": QUERY, "dir": str(memdir), "ranker": "local"})
    names = [s["filename"] for s in result["selected"]]
    assert names == ["b_rounding_2nd.md", "a_rounding_1st.md"]
    gone, intact = result["selected"][1]["staleness"], result["selected"][0]["staleness"]
    assert gone["missing"] == ["src/billing/invoice_rounding.py"] and gone["all_gone"]
    assert intact["stale"] is False and intact["missing"] == []


def test_status_shows_the_checkout_and_check_runs_now(checked_daemon: Any, repo: Repo) -> None:
    d, memdir = checked_daemon
    root = d.call("status")["roots"][0]
    assert root["checkout"] == {"path": str(repo.path), "source": "config", "reason": None}

    repo.git("rm", "-q", "src/billing/tax.py")
    repo.commit("tax moved out", when=T0 + 2 * DAY)
    result = d.call("check", {"dir": str(memdir)})
    assert result["stale"] == 2 and result["citing"] == 2
    assert result["folders"][0]["mode"] == "git"


def test_bad_check_and_cwd_params_are_errors_and_the_daemon_keeps_serving(
    checked_daemon: Any, tmp_path: Path
) -> None:
    d, memdir = checked_daemon
    with d.client() as c:
        with pytest.raises(InvalidParams, match="'dir'"):
            c.call("check", {})
        with pytest.raises(InvalidParams, match="unknown"):
            c.call("check", {"dir": str(memdir), "strict": True})
        for bad in ("relative/path", 42, "/a\0b"):
            with pytest.raises(InvalidParams, match="'cwd'"):
                c.call("select", {"query": QUERY, "dir": str(memdir), "cwd": bad})
        assert c.status()["state"] == "ready"


def test_checkouts_added_to_the_config_apply_after_sighup(
    make_daemon: Callable[..., DaemonProc], repo: Repo
) -> None:
    d = make_daemon()
    memdir = d.roots[0]
    _memory(memdir / "project_tax.md", "`src/billing/tax.py`")
    wait_until(lambda: d.call("status")["roots"][0]["checkout"] is not None, timeout=30)
    assert d.call("status")["roots"][0]["checkout"]["path"] is None
    assert "not an encoded project path" in d.call("status")["roots"][0]["checkout"]["reason"]

    config = Path(d.env["XDG_CONFIG_HOME"]) / "memoryd" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(f"checkouts:\n  {memdir}: {repo.path}\n")
    assert d.proc is not None
    d.proc.send_signal(signal.SIGHUP)

    def configured() -> bool:
        return bool(d.call("status")["roots"][0]["checkout"]["source"] == "config")

    wait_until(configured, timeout=30, what="the reloaded checkout")
    wait_until(_checked(d, memdir), timeout=30, what="the background check")


def test_the_hook_reports_cwd_and_warns_under_a_stale_memory(
    make_daemon: Callable[..., DaemonProc], repo: Repo
) -> None:
    d = make_daemon()
    memdir = memory_folder(str(repo.path), d.env).directory
    _memory(memdir / "project_rounding.md", "`src/billing/invoice_rounding.py`")
    repo.git("mv", "src/billing/invoice_rounding.py", "src/billing/round.py")
    repo.commit("rename", when=T0 + DAY)

    def prompt(session: str) -> str:
        event = {
            "hook_event_name": "UserPromptSubmit",
            "session_id": session,
            "cwd": str(repo.path),
            "prompt": QUERY,
        }
        proc = subprocess.run(
            [sys.executable, "-m", "memoryd", "hook", "claude-code"],
            input=json.dumps(event),
            env={**d.env, "MEMORYD_SOCKET": str(d.socket)},
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout)
        return str(out["hookSpecificOutput"]["additionalContext"])

    prompt("s1")
    wait_until(_checked(d, memdir), timeout=30, what="the background check")
    roots = {r["path"]: r for r in d.call("status")["roots"]}
    assert roots[str(memdir)]["checkout"]["path"] == str(repo.path)
    assert roots[str(memdir)]["checkout"]["source"] == "hook"
    text = prompt("s2")
    assert (
        "Caution: cites `src/billing/invoice_rounding.py`, which no longer exists; "
        "renamed to `src/billing/round.py`." in text
    )


def test_the_report_lists_memories_citing_code_that_changed_or_vanished(
    checked_daemon: Any,
) -> None:
    d, memdir = checked_daemon
    result = d.call("report", {"dir": str(memdir)})
    assert result["summary"]["code_drift"] == 1
    text = Path(result["path"]).read_text()
    section = text.split("### Memories citing code that changed or vanished", 1)[1]
    line = "- `a_rounding_1st.md`: cites `src/billing/invoice_rounding.py`, which no longer exists"
    assert line in section
    assert "b_rounding_2nd.md" not in section
