"""``memoryd why`` and ``memoryd eval`` on small Claude Code transcripts written here.

``why`` runs against the module's daemon after the real hook selected for a
prompt (the telemetry row it reads is the daemon's); ``eval`` replays
transcripts into its own temporary index, and its figures are checked
against a case worked out by hand.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from daemon_fixtures import DaemonProc, daemon_env, write_memory
from hook_project import Project, seed
from mcp import ClientSession
from test_mcp import payload, with_mcp

from memoryd.claude_folders import folder_name, memory_folder
from memoryd.integrations.why import quotes
from memoryd.select.candidates import Candidate
from memoryd.select.local import LocalRanker, Scored

XDIST = "feedback_pytest_xdist_gotcha.md"
USAGE = "reference_pytest_usage.md"
LEDGER = "project_billing_ledger.md"
CI = "feedback_ci_cache.md"
PROMPT = "pytest -n auto: xdist workers share one test database, how do I fix that?"


def user(text: str, cwd: Path) -> dict[str, Any]:
    return {"type": "user", "cwd": str(cwd), "message": {"role": "user", "content": text}}


def tool(name: str, **given: str) -> dict[str, Any]:
    block = {"type": "tool_use", "id": "t", "name": name, "input": given}
    return {"type": "assistant", "message": {"role": "assistant", "content": [block]}}


def said(text: str) -> dict[str, Any]:
    content = [{"type": "text", "text": text}]
    return {"type": "assistant", "message": {"role": "assistant", "content": content}}


def tool_result() -> dict[str, Any]:
    content = [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]
    return {"type": "user", "message": {"role": "user", "content": content}}


def recalled(path: Path) -> dict[str, Any]:
    memories = [{"path": str(path), "content": "...", "mtimeMs": 1, "header": "x"}]
    return {"type": "attachment", "attachment": {"type": "relevant_memories", "memories": memories}}


def hook_context(text: str) -> dict[str, Any]:
    """How Claude Code records what a UserPromptSubmit hook added."""
    attachment = {"type": "hook_additional_context", "hookEvent": "UserPromptSubmit"}
    return {"type": "attachment", "attachment": {**attachment, "content": [text]}}


def append(path: Path, *records: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in records)


def memoryd(env: dict[str, str], cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memoryd", *argv],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def transcript_path(env: dict[str, str], cwd: Path, session: str) -> Path:
    return Path(env["CLAUDE_CONFIG_DIR"]) / "projects" / folder_name(str(cwd)) / f"{session}.jsonl"


def test_why_tells_what_the_hook_injected_what_was_left_out_and_what_the_agent_used(
    project: Project,
) -> None:
    d: DaemonProc = project.daemon
    env = {**d.env, "MEMORYD_SOCKET": str(d.socket)}
    log = transcript_path(env, project.cwd, "why1")
    # An earlier turn ran pytest: pytest's usage doc is left out as a tool in use.
    append(log, user("run the tests", project.cwd), tool("Bash", command="pytest -x"))
    append(log, tool_result(), user(PROMPT, project.cwd))
    event = project.event("UserPromptSubmit", session="why1", prompt=PROMPT)
    event["transcript_path"] = str(log)
    context = project.context(event)
    assert XDIST in context
    gotcha = project.memdir / XDIST
    append(
        log,
        hook_context(context),
        tool("Read", file_path=str(gotcha)),
        tool_result(),
        said("Per the note: with xdist every worker needs its own database suffix, so add one."),
    )
    d.call("stats")  # returns once the daemon's telemetry rows are written

    done = memoryd(env, project.cwd, "why", "--json")  # the project's folder, its latest session
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["session_id"] == "why1"
    assert report["transcript"] == str(log)
    [prompt] = report["prompts"]
    assert prompt["query"] is None  # telemetry.log_queries is off by default
    assert prompt["query_hash"] == hashlib.sha256(PROMPT.encode()).hexdigest()[:16]
    assert prompt["ranker"] == "local" and prompt["turn_found"] is True
    first = prompt["injected"][0]
    assert first["filename"] == XDIST and first["rank"] == 1
    assert isinstance(first["score"], float) and first["judge"] is None
    assert first["tokens"] > 20
    assert (first["delivered"], first["read"], first["quoted"]) == (True, True, True)
    assert prompt["left_out"]["tool_docs"] == [USAGE]

    text = memoryd(env, project.cwd, "why", "--dir", str(project.memdir), "--last", "3")
    assert text.returncode == 0, text.stderr
    assert "read the file, quoted it" in text.stdout
    assert f"left out, usage doc of a tool in use: {USAGE}" in text.stdout
    assert "query logging is off" in text.stdout

    async def ask(session: ClientSession) -> None:
        answer = payload(await session.call_tool("memory_why", {"last": 1}))
        assert answer["session_id"] == "why1"
        assert answer["prompts"][0]["injected"][0]["read"] is True

    mcp_env = {**env, "CLAUDE_CODE_SESSION_ID": "why1", "CLAUDE_PROJECT_DIR": str(project.cwd)}
    with_mcp(d, ask, mcp_env)


def test_why_without_a_recorded_session_says_how_one_gets_recorded(project: Project) -> None:
    env = {**project.daemon.env, "MEMORYD_SOCKET": str(project.daemon.socket)}
    done = memoryd(env, project.cwd, "why", "--session", "never-seen")
    assert done.returncode == 0, done.stderr
    assert "(no selects recorded for this session)" in done.stdout
    other = project.cwd.parent / "elsewhere"
    other.mkdir()
    memdir = memory_folder(str(other), env).directory
    write_memory(memdir / "feedback_x.md", "anything")
    done = memoryd(env, other, "why")
    assert done.returncode == 1
    assert "no select with a session is recorded" in done.stderr


def test_quotes_needs_a_run_of_eight_words() -> None:
    text = "Warning: with xdist every worker needs its own database suffix."
    assert quotes("so with xdist every worker needs its own database, right", text)
    assert not quotes("xdist worker database suffix", text)


def test_eval_scores_select_against_what_the_agent_read_on_a_hand_worked_case(
    tmp_path: Path,
) -> None:
    env = daemon_env(tmp_path / "home")
    cwd = tmp_path / "shop"
    cwd.mkdir()
    memdir = memory_folder(str(cwd), env).directory
    seed(memdir)
    write_memory(memdir / CI, "CI cache: stale wheels come from the pip cache key", body="x")
    log = transcript_path(env, cwd, "s1")
    append(
        log,
        # 1: the agent reads the xdist gotcha: label {XDIST}.
        user(PROMPT, cwd),
        tool("Read", file_path=str(memdir / XDIST)),
        tool_result(),
        # 2: Claude Code's recall attaches the ledger memory: label {LEDGER}.
        user("the billing rewrite: do invoices come from the ledger service now?", cwd),
        recalled(memdir / LEDGER),
        # 3: nothing read: not labelled. memoryd's hook gave the CI memory here.
        user("rename the variable total to amount", cwd),
        hook_context(f"memoryd: memories from {memdir} ...\n\n## ci ({memdir / CI})\nbody\n"),
        # Not prompts: a subagent's task, a slash command's echo, a notice.
        {**user("search the ledger docs", cwd), "isSidechain": True},
        user("<command-name>/model</command-name>", cwd),
        {**user("Caveat: local commands below", cwd), "isMeta": True},
        # 4: the gotcha again, seen in turn 1: not a label, so not labelled.
        user("and the database suffix, where is it set?", cwd),
        tool("Read", file_path=str(memdir / XDIST)),
        tool_result(),
        # 5: the usage doc read for a prompt that does not name it: label {USAGE}.
        user("rename the variable total to amount, then check it", cwd),
        tool("Read", file_path=str(memdir / USAGE)),
        tool_result(),
        # 6: the CI memory, given by the hook in turn 3: not a label, so not labelled.
        user("the CI cache keeps stale wheels again", cwd),
        tool("Read", file_path=str(memdir / CI)),
        tool_result(),
    )
    done = memoryd(env, tmp_path, "eval", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    [project] = report["projects"]
    assert project["dir"] == str(memdir)
    assert (project["prompts"], project["labelled_prompts"], project["labels"]) == (6, 3, 3)
    # By hand: select picks XDIST for 1 and LEDGER for 2 (hits), nothing for 5 (a miss):
    # precision 2/2, recall 2/3, F1 2 * 1 * 2/3 / (1 + 2/3) = 0.8.
    local = project["rankers"]["local"]
    assert (local["picked"], local["hits"]) == (2, 2)
    assert (local["precision"], local["recall"], local["f1"]) == (1.0, 0.6667, 0.8)
    assert report["sent"] is False and "rarely read again" in report["bias"]

    text = memoryd(env, tmp_path, "eval", "--transcripts", str(log.parent))
    assert text.returncode == 0, text.stderr
    assert "6 prompts in 1 sessions, 3 labelled (3 labels)" in text.stdout
    assert "nothing was sent anywhere" in text.stdout
    refused = memoryd(env, tmp_path, "eval", "--ranker", "anthropic")
    assert refused.returncode == 1 and "API key" in refused.stderr
    refused = memoryd(env, tmp_path, "eval", "--ranker", "openai")
    assert refused.returncode == 1 and "openai.base_url" in refused.stderr


def test_the_local_ranker_hands_back_its_best_misses_below_the_cut() -> None:
    def mem(filename: str, description: str) -> Candidate:
        return Candidate(filename, filename[:-3], description, "feedback", description, 0.0)

    cands = [
        mem("a.md", "xdist workers share one test database"),
        mem("b.md", "xdist workers need a database suffix each"),
        mem("c.md", "the billing ledger runs nightly"),
    ]
    below: list[Scored] = []
    picked = LocalRanker().ranked("xdist workers test database", cands, 1, below=below)[0]
    assert [s.filename for s in picked] == ["a.md"]
    # b reached the query but fell past the limit; c was never reached, so it is not a miss.
    assert [s.filename for s in below] == ["b.md"]
    assert 0 < below[0].score <= picked[0].score
