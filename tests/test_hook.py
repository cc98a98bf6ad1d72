"""The Claude Code hook and its installer, as Claude Code runs them: real processes, real daemon."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from daemon_fixtures import DaemonProc, write_memory
from fake_messages_api import Delay, FakeMessagesAPI
from git_repo import Repo
from hook_project import Project, make_project

from memoryd.claude_folders import folder_name, memory_folder
from memoryd.integrations._transcript import LAST_CALLS, scan
from memoryd.integrations.claude_code import project_slug

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "memory"


def test_project_slug_is_the_checkouts_name() -> None:
    assert project_slug("/home/a/Shop.API") == "shop.api"
    assert project_slug("/home/a/My App!") == "my-app-"
    assert project_slug("/") is None


def test_prompt_gets_path_age_staleness_and_content(project: Project) -> None:
    text = project.context(project.event("UserPromptSubmit", prompt="where do invoices come from?"))
    path = project.memdir / "project_billing_ledger.md"
    assert str(path) in text
    assert "A project memory, 10 days old." in text
    assert "may be stale" in text
    assert "the old cron is retired" in text

    text = project.context(
        project.event("UserPromptSubmit", prompt="pytest xdist workers database")
    )
    block = text.split("feedback_pytest_xdist_gotcha.md", 1)[1].split("\n## ", 1)[0]
    assert "0 days old." in block
    assert "stale" not in block
    assert "its own database suffix" in block


def test_transcript_tool_calls_exclude_usage_docs(project: Project, tmp_path: Path) -> None:
    prompt = "how do I run the pytest suite in parallel with xdist and coverage?"
    plain = project.context(project.event("UserPromptSubmit", "plain", prompt=prompt))
    assert "reference_pytest_usage.md" in plain
    transcript = tmp_path / "t.jsonl"
    lines = [
        {"type": "user", "message": {"role": "user", "content": "run the tests"}},
        {
            "type": "assistant",
            "message": {
                "content": [
                    {"type": "text", "text": "Running them."},
                    {"type": "tool_use", "name": "Bash", "input": {"command": "pytest -n auto"}},
                ]
            },
        },
    ]
    transcript.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    event = project.event("UserPromptSubmit", "tools", prompt=prompt)
    with_tools = project.context({**event, "transcript_path": str(transcript)})
    assert "reference_pytest_usage.md" not in with_tools
    assert "feedback_pytest_xdist_gotcha.md" in with_tools


def test_recent_tools_reads_the_transcript_tail_and_forgives_garbage(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    calls = [
        {"type": "tool_use", "name": "Read", "input": {"file_path": "x"}},
        {"type": "tool_use", "name": "Bash", "input": {"command": "FOO=1 sudo ./bin/Ruff check"}},
        {"type": "tool_use", "name": "Bash", "input": {"command": "terraform plan # why"}},
    ]
    rows = [json.dumps({"message": {"content": [c]}}) for c in calls]
    transcript.write_text("not json\n" + "\n".join(rows) + '\n{"message": 3}\n')
    assert scan(str(transcript)).tools == ["Bash", "terraform", "ruff", "Read"]
    later = [{"type": "tool_use", "name": f"Tool{i}"} for i in range(LAST_CALLS - 1)]
    with transcript.open("a") as fh:
        fh.writelines(json.dumps({"message": {"content": [c]}}) + "\n" for c in later)
    assert scan(str(transcript)).tools[-3:] == ["Tool0", "Bash", "terraform"]
    assert scan(str(tmp_path / "missing.jsonl")).tools == []
    assert scan(str(tmp_path)).tools == []
    assert scan(None).tools == []


def test_a_session_never_sees_a_memory_twice_even_across_daemon_restarts(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    project = make_project(make_daemon(), tmp_path)
    event = project.event("UserPromptSubmit", "repeat", prompt="pytest xdist workers database")
    first = project.context(event)
    assert "feedback_pytest_xdist_gotcha.md" in first
    assert "feedback_pytest_xdist_gotcha.md" not in project.context(event)
    project.daemon.stop()
    project.daemon.start()
    assert "feedback_pytest_xdist_gotcha.md" not in project.context(event)
    other = project.context({**event, "session_id": "another"})
    assert "feedback_pytest_xdist_gotcha.md" in other


def test_each_memory_is_capped_at_4_kb_and_200_lines(project: Project) -> None:
    wide = "\n".join(f"deploy note {i:03d} " + "x" * 86 for i in range(100))  # ~10 KB
    write_memory(project.memdir / "feedback_deploy_wide.md", "Deploy gotcha: canary", body=wide)
    tall = "\n".join(f"rollback step {i}" for i in range(400))
    write_memory(project.memdir / "feedback_rollback_tall.md", "Rollback gotcha: order", body=tall)
    text = project.context(project.event("UserPromptSubmit", prompt="deploy canary rollback order"))
    blocks = {b.split(" (", 1)[0]: b for b in text.split("\n## ")[1:]}
    wide_block, tall_block = blocks["feedback_deploy_wide"], blocks["feedback_rollback_tall"]
    for block in (wide_block, tall_block):
        body = block.split("\n\n", 1)[1].split("\n[... ", 1)[0]
        assert len(body.encode()) <= 4096
        assert len(body.splitlines()) <= 200
        assert "cut by memoryd" in block
    assert "deploy note 000" in wide_block
    assert "deploy note 099" not in wide_block
    assert "rollback step 199" not in tall_block  # the frontmatter takes a few of the 200 lines
    assert "rollback step 190" in tall_block


def test_a_session_gets_at_most_60_kb(project: Project) -> None:
    body = "\n".join("k8s migration detail " + "y" * 80 for _ in range(60))
    for i in range(20):
        write_memory(
            project.memdir / f"project_k8s_migration_{i:02d}.md",
            f"Kubernetes migration gotcha number {i}: cluster upgrade",
            mtype="project",
            body=body,
        )
    event = project.event("UserPromptSubmit", "big", prompt="kubernetes migration cluster upgrade")
    texts: list[str] = []
    while text := project.context(event):
        texts.append(text)
        assert len(texts) < 10
    total = sum(len(t.encode()) for t in texts)
    assert 50 * 1024 < total <= 60 * 1024
    assert "60 KB memory budget is spent" in texts[-1]


def test_session_start_gives_the_resume_line_and_last_summary(project: Project) -> None:
    assert project.context(project.event("SessionStart", source="startup")) == ""
    saved = project.daemon.call(
        "save",
        {
            "dir": str(project.memdir),
            "project": "shop.api",
            "session_summary": "Moved invoice generation to the ledger service.",
            "active_state": "Cron removal is next.",
        },
    )
    text = project.context(project.event("SessionStart", source="startup"))
    assert "shop.api" in text
    assert saved["path"] in text
    assert "Moved invoice generation to the ledger service." in text


def test_session_start_resumes_the_folders_newest_session_whatever_the_cwd_is_called(
    project: Project,
) -> None:
    for session, project_name, summary in (
        ("2025-06-01-09-00", "tasktrack", "Older work on reminders."),
        ("2025-06-05-14-15", "tasktrack", "Due-date reminders shipped behind a flag."),
    ):
        project.daemon.call(
            "save",
            {
                "dir": str(project.memdir),
                "project": project_name,
                "session": session,
                "session_summary": summary,
                "active_state": "Flag rollout.",
            },
        )
    text = project.context(project.event("SessionStart", source="startup"))
    assert "tasktrack" in text  # the checkout is called Shop.API: no slug match needed
    assert "2025-06-05-14-15-tasktrack.md" in text
    assert "Due-date reminders shipped behind a flag." in text


def test_the_same_prompt_twice_adds_nothing_the_second_time(project: Project) -> None:
    """The README's example folder: the second ask used to add the due-date incident."""
    for path in EXAMPLES.glob("*.md"):
        shutil.copy(path, project.memdir / path.name)
    event = project.event("UserPromptSubmit", "twice", prompt="how do I run the tests?")
    first = project.context(event)
    assert "feedback_pytest_xdist_gotcha.md" in first
    assert "project_incident_due_dates.md" not in first
    assert project.context(event) == ""


def _old_daemon(path: Path, memory: Path) -> tuple[socket.socket, list[dict[str, Any]]]:
    """A peer answering like a daemon from before ``select`` took ``cwd`` and ``timeout_ms``."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    seen: list[dict[str, Any]] = []
    entry: dict[str, Any] = {"filename": memory.name, "path": str(memory), "name": "Old pick"}
    entry |= {"age_days": 0, "staleness": None}

    def serve() -> None:
        conn, _ = server.accept()
        with conn, conn.makefile("rb") as reader:
            for line in reader:
                request = json.loads(line)
                seen.append(request["params"])
                unknown = sorted({"cwd", "timeout_ms"} & set(request["params"]))
                if unknown:
                    error = {"code": "invalid_params", "message": "unknown parameter(s)"}
                    reply: dict[str, Any] = {"error": error | {"data": {"fields": unknown}}}
                else:
                    reply = {"result": {"run_id": "r1", "selected": [entry]}}
                conn.sendall(json.dumps({"id": request["id"], **reply}).encode() + b"\n")

    threading.Thread(target=serve, daemon=True).start()
    return server, seen


def test_a_daemon_older_than_the_hooks_hints_is_asked_again_without_them(
    offline: Project,
) -> None:
    project = offline
    memory = project.memdir / "feedback_pytest_xdist_gotcha.md"
    path = Path("/tmp") / f"md-old-{os.getpid()}.sock"
    server, seen = _old_daemon(path, memory)
    try:
        proc = project.hook(
            project.event("UserPromptSubmit", prompt="pytest workers"), "--socket", str(path)
        )
    finally:
        server.close()
        path.unlink()
    assert proc.returncode == 0, proc.stderr
    assert (
        "its own database suffix"
        in json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    )
    assert [sorted({"cwd", "timeout_ms"} & set(params)) for params in seen] == [
        ["cwd", "timeout_ms"],
        [],
    ]


# -- where the memory folder is ----------------------------------------------------


@pytest.mark.parametrize("name", ["shop_api", "my shop", "café+@~x"])
def test_every_project_name_finds_claude_codes_folder(
    shared_daemon: DaemonProc, tmp_path: Path, name: str
) -> None:
    """Claude Code maps every character but [A-Za-z0-9] to '-': so must the hook."""
    project = make_project(shared_daemon, tmp_path, name)
    expected = "".join(c if c.isascii() and c.isalnum() else "-" for c in str(project.cwd))
    assert project.memdir.parent.name == expected
    text = project.context(project.event("UserPromptSubmit", prompt="pytest xdist workers"))
    assert "its own database suffix" in text


def test_a_path_over_200_characters_finds_the_hashed_folder(
    shared_daemon: DaemonProc, tmp_path: Path
) -> None:
    project = make_project(shared_daemon, tmp_path, "long_" + "x" * 200)
    assert len(project.memdir.parent.name) > 200
    assert project.memdir.parent.name == folder_name(str(project.cwd))
    assert "its own database suffix" in project.context(
        project.event("UserPromptSubmit", prompt="pytest xdist workers")
    )


def test_a_subdirectory_a_worktree_and_a_symlink_find_the_checkouts_folder(
    shared_daemon: DaemonProc, tmp_path: Path
) -> None:
    repo = Repo(tmp_path / "shop")
    repo.write("README.md")
    repo.commit("init", when=1_700_000_000)
    project = make_project(shared_daemon, tmp_path, "shop")
    (repo.path / "src" / "api").mkdir(parents=True)
    repo.git("worktree", "add", "-q", "-b", "side", str(tmp_path / "shop-side"))
    (tmp_path / "link").symlink_to(repo.path / "src")
    prompt = "pytest xdist workers"
    for session, start in enumerate(
        [repo.path / "src" / "api", tmp_path / "shop-side", tmp_path / "link"]
    ):
        event = {**project.event("UserPromptSubmit", f"s{session}", prompt=prompt)}
        event["cwd"] = str(start)
        assert "its own database suffix" in project.context(event), start
    # Claude Code passes the start directory; the cwd may have moved on since.
    event = {**project.event("UserPromptSubmit", "moved", prompt=prompt), "cwd": "/"}
    assert "its own database suffix" in project.context(
        event, CLAUDE_PROJECT_DIR=str(repo.path / "src")
    )


def test_auto_memory_directory_and_claude_config_dir_are_honoured(
    shared_daemon: DaemonProc, tmp_path: Path
) -> None:
    project = make_project(shared_daemon, tmp_path)
    elsewhere = tmp_path / "notes" / "memory"
    shutil.copytree(project.memdir, elsewhere)
    shutil.rmtree(project.memdir)
    event = project.event("UserPromptSubmit", prompt="pytest xdist workers")
    assert project.context(event) == ""
    settings = project.cwd / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"autoMemoryDirectory": str(elsewhere)}))
    assert str(elsewhere) in project.context(event)
    settings.unlink()
    config = tmp_path / "other-config"
    moved = memory_folder(str(project.cwd), {"CLAUDE_CONFIG_DIR": str(config)}).directory
    shutil.copytree(elsewhere, moved)
    again = {**event, "session_id": "s2"}
    assert str(moved) in project.context(again, CLAUDE_CONFIG_DIR=str(config))


# -- what the session has seen -------------------------------------------------------


def _transcript(path: Path, *records: dict[str, Any]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def test_memories_claude_code_recalled_or_the_agent_read_count_as_surfaced(
    project: Project, tmp_path: Path
) -> None:
    gotcha = project.memdir / "feedback_pytest_xdist_gotcha.md"
    event = project.event("UserPromptSubmit", "recall", prompt="pytest xdist workers database")
    assert "its own database suffix" in project.context(event)
    # The record Claude Code writes when its own recall injects memories (2.1.197).
    recalled = {
        "type": "attachment",
        "attachment": {
            "type": "relevant_memories",
            "memories": [{"path": str(gotcha), "content": "...", "mtimeMs": 1, "header": "x"}],
        },
    }
    fresh = {**event, "session_id": "recalled"}
    fresh["transcript_path"] = _transcript(tmp_path / "a.jsonl", recalled)
    assert "feedback_pytest_xdist_gotcha.md" not in project.context(fresh)
    read = {
        "type": "assistant",
        "message": {
            "content": [{"type": "tool_use", "name": "Read", "input": {"file_path": str(gotcha)}}]
        },
    }
    fresh = {**event, "session_id": "read"}
    fresh["transcript_path"] = _transcript(tmp_path / "b.jsonl", read)
    assert "feedback_pytest_xdist_gotcha.md" not in project.context(fresh)
    assert scan(fresh["transcript_path"]).files == [str(gotcha)]


def test_compaction_restarts_the_budget_even_without_a_resume_line(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    event = project.event("UserPromptSubmit", "cmp", prompt="pytest xdist workers database")
    assert project.context(event)
    assert project.state("cmp", monkeypatch).injected_bytes > 0
    assert project.context(project.event("SessionStart", "cmp", source="compact")) == ""
    assert project.state("cmp", monkeypatch).injected_bytes == 0


def test_session_start_by_source(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    project.daemon.call(
        "save",
        {
            "dir": str(project.memdir),
            "project": "shop.api",
            "session_summary": "Moved invoice generation to the ledger service.",
            "active_state": "Cron removal is next.",
        },
    )
    start = project.context(project.event("SessionStart", "src", source="startup"))
    assert "Moved invoice generation" in start
    charged = project.state("src", monkeypatch).injected_bytes
    assert charged == len(start.encode())
    # Resumed: the earlier injection is in the transcript already; nothing added, nothing charged.
    assert project.context(project.event("SessionStart", "src", source="resume")) == ""
    assert project.state("src", monkeypatch).injected_bytes == charged
    # Cleared: a fresh conversation, so the resume line again.
    assert "Moved invoice generation" in project.context(
        project.event("SessionStart", "src", source="clear")
    )
    # Compacted: the context was summarised; the resume line again, the budget starts over.
    again = project.context(project.event("SessionStart", "src", source="compact"))
    assert "Moved invoice generation" in again
    assert project.state("src", monkeypatch).injected_bytes == len(again.encode())


def test_the_claude_ranker_answers_within_the_hooks_budget_or_the_local_one_does(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path, fake_messages_api: FakeMessagesAPI
) -> None:
    """A slow API must not cost the prompt its memories: the daemon falls back in time."""
    fake_messages_api.respond(Delay(30))
    d = make_daemon(start=False)
    d.env |= {"ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": fake_messages_api.base_url}
    d.env["NO_PROXY"] = "127.0.0.1,localhost"
    project = make_project(d.start(), tmp_path)
    log = tmp_path / "hook.log"
    event = project.event("UserPromptSubmit", prompt="pytest xdist workers database")
    text = project.context(event, "--log-file", str(log))
    assert "its own database suffix" in text
    assert fake_messages_api.requests  # Claude was asked, and did not answer in time
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [x["fallback"] for x in lines if x["event"] == "hook_ranker_fallback"] == ["deadline"]


def test_what_the_hook_gave_up_on_is_not_recorded_as_shown(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The answer came after the budget: the model never saw it, so it is not 'shown'."""
    path = Path("/tmp") / f"md-late-{os.getpid()}.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    memory = project.memdir / "feedback_pytest_xdist_gotcha.md"
    entry = {"filename": memory.name, "path": str(memory), "name": "x", "age_days": 0}

    def answer_late() -> None:
        conn, _ = server.accept()
        with conn, conn.makefile("rb") as reader:
            request = json.loads(reader.readline())
            threading.Event().wait(3)  # past the hook's 1 s budget
            reply = {"id": request["id"], "result": {"run_id": "r", "selected": [entry]}}
            with contextlib.suppress(OSError):  # the hook has hung up
                conn.sendall(json.dumps(reply).encode() + b"\n")

    threading.Thread(target=answer_late, daemon=True).start()
    event = project.event("UserPromptSubmit", "late", prompt="pytest xdist workers database")
    try:
        late = project.hook(event, "--socket", str(path), "--timeout", "1")
    finally:
        server.close()
        path.unlink()
    assert (late.returncode, late.stdout) == (0, "")
    assert project.state("late", monkeypatch).shown == []
    assert "its own database suffix" in project.context(event)
    assert project.state("late", monkeypatch).shown == [str(memory)]


# -- install-hook ------------------------------------------------------------------


@pytest.fixture
def settings(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "claude" / "settings.json"
    path.parent.mkdir()
    yield path


def install(settings: Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    argv = ["install-hook", "claude-code", "--settings", str(settings)]
    return subprocess.run(
        [sys.executable, "-m", "memoryd", *argv],
        capture_output=True,
        text=True,
        timeout=15,
        cwd=cwd,
        env={**os.environ, "CLAUDE_CONFIG_DIR": str(settings.parent)},
    )


def test_install_merges_backs_up_and_is_idempotent(settings: Path) -> None:
    mine = {"type": "command", "command": "echo hi"}
    pre_tool = [{"matcher": "Bash", "hooks": [mine]}]
    original: dict[str, Any] = {
        "model": "opus",
        "hooks": {"UserPromptSubmit": [{"hooks": [mine]}], "PreToolUse": pre_tool},
    }
    settings.write_text(json.dumps(original))
    first = install(settings)
    assert first.returncode == 0, first.stderr
    assert "added UserPromptSubmit" in first.stdout and "added SessionStart" in first.stdout
    doc = json.loads(settings.read_text())
    assert doc["model"] == "opus"
    assert doc["hooks"]["PreToolUse"] == pre_tool
    prompt_groups = doc["hooks"]["UserPromptSubmit"]
    assert prompt_groups[0] == {"hooks": [mine]}
    command = prompt_groups[1]["hooks"][0]["command"]
    assert command.endswith("-m memoryd hook claude-code")
    assert sys.executable in command
    assert doc["hooks"]["SessionStart"][0]["hooks"][0]["command"] == command
    backups = list(settings.parent.glob("settings.json.bak-*"))
    assert len(backups) == 1
    assert json.loads(backups[0].read_text()) == original

    after_first = settings.read_text()
    second = install(settings)
    assert second.returncode == 0
    assert "already" in second.stdout and "added" not in second.stdout
    assert settings.read_text() == after_first
    assert len(list(settings.parent.glob("settings.json.bak-*"))) == 1


def test_install_creates_missing_settings_and_names_the_folder(
    settings: Path, tmp_path: Path
) -> None:
    repo = Repo(tmp_path / "my_repo")
    (repo.path / "src").mkdir()
    proc = install(settings, cwd=repo.path / "src")
    assert proc.returncode == 0, proc.stderr
    folder = settings.parent / "projects" / folder_name(str(repo.path)) / "memory"
    assert f"for {repo.path / 'src'} the hook reads {folder} (not created yet; " in proc.stdout
    assert set(json.loads(settings.read_text())["hooks"]) == {"UserPromptSubmit", "SessionStart"}
    assert not list(settings.parent.glob("settings.json.bak-*"))


@pytest.mark.parametrize("broken", ['{"hooks": ', "[]", '{"hooks": []}'])
def test_install_refuses_broken_settings_and_leaves_them(settings: Path, broken: str) -> None:
    settings.write_text(broken)
    proc = install(settings)
    assert proc.returncode == 1
    assert str(settings) in proc.stderr and "nothing was changed" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert settings.read_text() == broken
    assert not list(settings.parent.glob("settings.json.bak-*"))
