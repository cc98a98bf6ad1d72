"""``memoryd why`` and ``memoryd eval`` on a transcript the real Claude Code CLI wrote.

The unit tests write transcripts by hand; this checks the real format: the
prompt record the hook's select is matched to, a ``Read`` of the memory
file, and the answer's text. The model (the fake API) reads the memory the
hook injected and quotes it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from claude_cli import Claude
from fake_messages_api import Dynamic, FakeMessagesAPI, RecordedRequest, TextAnswer, ToolUse
from test_claude_code import (  # the module's fixtures, made afresh for this module
    PROMPT,
    api,
    binary,
    daemon,
    seed,
    tool_results,
    users,
)

pytestmark = pytest.mark.timeout(900)
__all__ = ["api", "binary", "daemon", "users"]

GOTCHA = "feedback_pytest_xdist_gotcha.md"
QUOTE = "The note says: give every xdist worker its own database suffix, then rerun."


def memoryd(user: Claude, cwd: Path, *argv: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "memoryd", *argv, "--json"],
        env=user.env(),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def test_why_and_eval_read_what_the_real_cli_recorded(users: Any, api: FakeMessagesAPI) -> None:
    user: Claude = users("hooked")
    checkout = user.home / "why-shop"
    memdir = seed(user, checkout)

    def choose(request: RecordedRequest) -> Any:
        if tool_results(request):
            return TextAnswer(QUOTE)
        return ToolUse("Read", {"file_path": str(memdir / GOTCHA)})

    api.respond(Dynamic(choose))
    try:
        done, _ = user.run(checkout, "-p", PROMPT, "--allowedTools", "Read")
    finally:
        api.respond(TextAnswer("Done."))
    assert done.returncode == 0, done.stderr + done.stdout

    report = memoryd(user, checkout, "why")
    [prompt] = report["prompts"]
    assert prompt["turn_found"] is True, report
    [first, *_] = prompt["injected"]
    assert first["filename"] == GOTCHA
    assert (first["delivered"], first["read"], first["quoted"]) == (True, True, True)

    scored = memoryd(user, checkout, "eval")
    [project] = scored["projects"]
    assert project["dir"] == str(memdir)
    assert (project["prompts"], project["labelled_prompts"]) == (1, 1)
    assert project["rankers"]["local"]["hits"] == 1
