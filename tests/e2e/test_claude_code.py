"""memoryd with the real Claude Code CLI (pinned, and newest), offline, against a fake API.

``make e2e`` runs this (``make test`` does not collect it). Each check reads
what reached the model from the requests the fake API received:

(a) a relevant memory's text arrives through the hook, in the folder Claude
    Code itself names in its system prompt; (b) the same from a
    subdirectory, a path with ``_`` and a space, and a path over 200
    characters; (c) nothing twice, on a second prompt and on ``--resume``;
    (d) daemon down and (e) daemon hung: nothing added, nothing on stderr or
    in the transcript, every hook giving up by itself within its budget, and
    the median hooked run within the budget (plus a slack that holds under
    load) of a run without the hook; (f) memoryd's MCP tools are on the first
    request with default settings (listed, or with the newest CLI named for its
    tool search) and a ``tool_use`` round trip returns memoryd's answer; (g) a
    memory in the nested ``metadata:`` format arrives with its type.

Every check runs twice: with the pinned CLI and with the newest one.
"""

from __future__ import annotations

import contextlib
import json
import statistics
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from claude_cli import NEWEST, VERSION, Claude, installed
from daemon_fixtures import DaemonProc, module_daemon, write_memory
from fake_messages_api import Dynamic, FakeMessagesAPI, RecordedRequest, TextAnswer, ToolUse
from git_repo import Repo
from hook_project import silent_daemon

from memoryd.claude_folders import memory_folder
from memoryd.integrations.claude_code import DEFAULT_TIMEOUT

pytestmark = pytest.mark.timeout(900)

PROMPT = "Why do the pytest xdist workers clash on the test database?"
TOKEN = "ZEBRA-7731"
"""A word only the memory's body holds: where it shows up, the body got there."""
HOOKED = "UserPromptSubmit hook additional context"


@pytest.fixture(scope="module", params=[VERSION, NEWEST])
def binary(request: pytest.FixtureRequest) -> tuple[Path, Path | None]:
    """Each check runs with the pinned CLI and with the newest (with the Node.js it wants)."""
    return installed(request.param)


@pytest.fixture(scope="module")
def api() -> Iterator[FakeMessagesAPI]:
    with FakeMessagesAPI(default=TextAnswer("Done.")) as fake:
        yield fake


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProc]:
    with module_daemon(tmp_path_factory.mktemp("e2e-daemon")) as d:
        yield d


def make_user(
    binary: tuple[Path, Path | None],
    api: FakeMessagesAPI,
    daemon: DaemonProc,
    home: Path,
    *,
    hook: bool,
    mcp: bool,
) -> Claude:
    user = Claude(binary[0], home, api.base_url, daemon.socket, node=binary[1])
    if hook:
        done = subprocess.run(
            [sys.executable, "-m", "memoryd", "install-hook", "claude-code"],
            env=user.env(),
            capture_output=True,
            text=True,
            cwd=home,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
    if mcp:
        done, _ = user.run(
            home,
            "mcp",
            "add",
            "--scope",
            "user",
            "memoryd",
            "--",
            sys.executable,
            "-m",
            "memoryd",
            "mcp",
        )
        assert done.returncode == 0, done.stderr + done.stdout
    return user


def seed(user: Claude, checkout: Path) -> Path:
    """A git checkout with a memory folder, where memoryd and Claude Code both say it is."""
    Repo(checkout)
    memdir = memory_folder(str(checkout), user.env()).directory
    write_memory(
        memdir / "feedback_pytest_xdist_gotcha.md",
        "Gotcha: pytest -n auto makes xdist workers share one test database",
        body=f"Warning ({TOKEN}): give every xdist worker its own database suffix.",
    )
    (memdir / "reference_pytest_usage.md").write_text(
        "---\nname: pytest-usage\ndescription: How to run the pytest suite here\n"
        "metadata: \n  type: reference\n  originSessionId: 0d2f8e4b\n---\n"
        "Run `pytest -m 'not slow'`; see [[feedback-pytest-xdist-gotcha]].\n"
    )
    (memdir / "MEMORY.md").write_text(
        "- [xdist gotcha](feedback_pytest_xdist_gotcha.md) — workers share a database\n"
    )
    return memdir


USERS = {
    "hooked": (True, False),
    "plain": (False, False),
    "mcp": (False, True),
    "full": (True, True),
}
"""Kinds of user, as (hook installed, MCP server added): ``plain`` is the baseline for times."""


@pytest.fixture(scope="module")
def users(
    binary: tuple[Path, Path | None],
    api: FakeMessagesAPI,
    daemon: DaemonProc,
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[str], Claude]:
    """``users(kind)``: one isolated user of each kind, made on first use."""
    made: dict[str, Claude] = {}

    def get(kind: str) -> Claude:
        if kind not in made:
            hook, mcp = USERS[kind]
            home = tmp_path_factory.mktemp(kind)
            made[kind] = make_user(binary, api, daemon, home, hook=hook, mcp=mcp)
        return made[kind]

    return get


@pytest.fixture(scope="module")
def hooked(users: Callable[[str], Claude]) -> Claude:
    return users("hooked")


def main_requests(api: FakeMessagesAPI, since: int) -> list[RecordedRequest]:
    """The conversation's requests since ``since`` (not side queries)."""
    return [r for r in api.messages_requests[since:] if r.body.get("tools")]


def system_prompt(request: RecordedRequest) -> str:
    return "\n".join(b.get("text", "") for b in request.body.get("system", []))


def run_prompt(
    user: Claude, api: FakeMessagesAPI, cwd: Path, *args: str
) -> tuple[RecordedRequest, dict[str, Any], float]:
    """``claude -p`` in ``cwd``: its last conversation request, its JSON result, its wall time."""
    since = len(api.requests)
    done, took = user.run(cwd, "-p", *args, "--output-format", "json")
    assert done.returncode == 0, done.stderr + done.stdout
    result = json.loads(done.stdout)
    requests = main_requests(api, since)
    assert requests, "the CLI sent no request"
    return requests[-1], result, took


def test_a_memory_reaches_the_model_in_the_folder_claude_code_names(
    hooked: Claude, api: FakeMessagesAPI
) -> None:
    checkout = hooked.home / "shop"
    memdir = seed(hooked, checkout)
    request, _, _ = run_prompt(hooked, api, checkout, PROMPT)
    # Claude Code names its memory folder in the system prompt: the one memoryd resolved.
    assert f"persistent file-based memory at `{memdir}/`" in system_prompt(request)
    # It loads MEMORY.md itself ...
    assert f"Contents of {memdir}/MEMORY.md" in request.text
    # ... and memoryd adds the memory that helps, body included, after the user's turn.
    injected = [t for t in texts(request) if HOOKED in t]
    assert injected and TOKEN in injected[-1]
    assert f"{memdir}/feedback_pytest_xdist_gotcha.md" in injected[-1]
    assert api.connects == []  # nothing tried to leave the machine


def texts(request: RecordedRequest) -> list[str]:
    out: list[str] = []
    for message in request.body["messages"]:
        content = message["content"]
        if isinstance(content, str):
            out.append(content)
        else:
            out += [b.get("text", "") for b in content if isinstance(b, dict)]
            out += [json.dumps(b.get("content")) for b in content if b.get("type") == "tool_result"]
    return out


@pytest.mark.parametrize("layout", ["subdirectory", "underscore and space", "over 200 characters"])
def test_the_same_from_other_layouts(hooked: Claude, api: FakeMessagesAPI, layout: str) -> None:
    name = {
        "subdirectory": "store",
        "underscore and space": "my_repo x",
        "over 200 characters": "long_" + "x" * 210,
    }[layout]
    checkout = hooked.home / name
    memdir = seed(hooked, checkout)
    start = checkout / "src" / "api" if layout == "subdirectory" else checkout
    start.mkdir(parents=True, exist_ok=True)
    request, _, _ = run_prompt(hooked, api, start, PROMPT)
    assert f"persistent file-based memory at `{memdir}/`" in system_prompt(request)
    assert any(HOOKED in t and TOKEN in t for t in texts(request))


def test_nothing_twice_on_a_second_prompt_or_on_resume(
    hooked: Claude, api: FakeMessagesAPI
) -> None:
    checkout = hooked.home / "twice"
    seed(hooked, checkout)
    _, result, _ = run_prompt(hooked, api, checkout, PROMPT)
    session = result["session_id"]
    again, _, _ = run_prompt(hooked, api, checkout, PROMPT, "--resume", session)
    # The whole conversation goes out again: the memory is in it once, from the first turn.
    assert sum(t.count(TOKEN) for t in texts(again)) == 1
    resumed, _, _ = run_prompt(
        hooked, api, checkout, "And the coverage flags?", "--resume", session
    )
    assert sum(t.count(TOKEN) for t in texts(resumed)) == 1


PAIRS = 5
"""Runs with and without the hook, interleaved: the median of their differences is the cost."""
SLACK_S = 3.0
"""Allowed beyond the budget, at least: two hook processes starting on a loaded machine."""
SLACK_RATIO = 0.5
"""Allowed beyond the budget, as a share of a plain run: how much a CLI run varies under load."""
TIMEOUT = "DaemonTimeout: the daemon did not answer within "
ENDED_BY_ITSELF = ("hook_gave_nothing", "hook_skipped")
"""What the hook logs when it ends without an answer; one Claude Code killed logs nothing."""
GAVE_UP = ("DaemonUnavailable", "DaemonTimeout", "HookTimeout")


class Paired(NamedTuple):
    extra: float
    """The median of (hooked run - the plain run just before it), in seconds."""
    plain: float
    """The median plain run, in seconds."""
    requests: list[RecordedRequest]
    outputs: list[str]
    logs: list[list[dict[str, Any]]]
    """Each hooked run's hook log records."""


def paired_times(
    hooked: Claude, plain: Claude, api: FakeMessagesAPI, cwd: Path, socket_path: Path, logs: Path
) -> Paired:
    """:data:`PAIRS` pairs, a plain run then a hooked one (``socket_path`` as the daemon's socket,
    each run's hook log in ``logs``): a pair shares the machine's load of the moment."""
    differences, without, requests, outputs, records = [], [], [], [], []
    for i in range(PAIRS):
        _, _, took_plain = run_prompt(plain, api, cwd, PROMPT)
        without.append(took_plain)
        since = len(api.requests)
        log = logs / f"hook-{i}.log"
        done, took = hooked.run(
            cwd,
            "-p",
            PROMPT,
            "--output-format",
            "stream-json",
            "--verbose",
            env={"MEMORYD_SOCKET": str(socket_path), "MEMORYD_HOOK_LOG": str(log)},
        )
        assert done.returncode == 0, done.stderr
        differences.append(took - took_plain)
        requests += main_requests(api, since)
        outputs.append(done.stdout + done.stderr)
        lines = log.read_text().splitlines() if log.exists() else []
        records.append([json.loads(line) for line in lines])
    return Paired(
        statistics.median(differences), statistics.median(without), requests, outputs, records
    )


@pytest.mark.parametrize("state", ["down", "hung"])
def test_a_daemon_down_or_hung_adds_nothing_says_nothing_and_costs_at_most_the_budget(
    users: Callable[[str], Claude], api: FakeMessagesAPI, tmp_path: Path, state: str
) -> None:
    hooked, plain = users("hooked"), users("plain")
    checkout = hooked.home / f"daemon-{state}"
    seed(hooked, checkout)
    seed(plain, checkout)
    with contextlib.ExitStack() as stack:
        path = stack.enter_context(silent_daemon()) if state == "hung" else tmp_path / "none.sock"
        runs = paired_times(hooked, plain, api, checkout, path, tmp_path)
    assert runs.requests and not any("memoryd:" in t for r in runs.requests for t in texts(r))
    # Silent: no hook output on stderr, in stream-json, or in the transcript.
    hook_events = [
        json.loads(line)
        for out in runs.outputs
        for line in out.splitlines()
        if line.startswith("{") and '"hook_response"' in line
    ]
    assert hook_events and all(not event.get("stderr") for event in hook_events), hook_events
    transcripts = (hooked.home / ".claude" / "projects").rglob("*.jsonl")
    for transcript in transcripts:
        for line in transcript.read_text().splitlines():
            record = json.loads(line)
            attachment = record.get("attachment") or {}
            if attachment.get("type", "").startswith("hook_") and "memoryd" in str(
                attachment.get("command", "")
            ):
                assert attachment.get("stderr", "") == "", attachment
    # Within the budget by the hook's own doing, not Claude Code's timeout: in
    # every run each hook gave up by itself (a killed one logs nothing), and
    # the waits it chose for a hung daemon add up to at most one budget.
    for records in runs.logs:
        assert any(r["event"] == "hook_gave_nothing" for r in records), records
        assert all(r["event"] in ENDED_BY_ITSELF for r in records), records
        reasons = [r["reason"] for r in records if r["event"] == "hook_gave_nothing"]
        assert all(r.startswith(GAVE_UP) for r in reasons), reasons
        waits = [float(r.removeprefix(TIMEOUT).removesuffix(" s")) for r in reasons if TIMEOUT in r]
        assert sum(waits) <= DEFAULT_TIMEOUT, reasons
    # And by the clock, with margins that hold on a loaded machine: the median
    # extra time of a hooked run over the plain run just before it, against
    # the budget plus the larger of an absolute and a relative slack. A hook
    # left to Claude Code's 10 s timeout costs far more.
    allowed = DEFAULT_TIMEOUT + max(SLACK_S, SLACK_RATIO * runs.plain)
    assert runs.extra <= allowed, (runs.extra, runs.plain, allowed)


def tool_results(request: RecordedRequest) -> list[str]:
    """The text of every tool result in the conversation."""
    out: list[str] = []
    for message in request.body["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                inner = block.get("content")
                if isinstance(inner, str):
                    out.append(inner)
                elif isinstance(inner, list):
                    out += [b.get("text", "") for b in inner if isinstance(b, dict)]
    return out


SELECT = "mcp__memoryd__memory_select"


def called(request: RecordedRequest) -> list[str]:
    """The tools the model called so far in the conversation, in order."""
    return [
        block["name"]
        for message in request.body["messages"]
        if message["role"] == "assistant" and isinstance(message["content"], list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_use"
    ]


def ask_with_the_tool(user: Claude, api: FakeMessagesAPI, cwd: Path) -> list[RecordedRequest]:
    """One prompt whose model answer is a ``memory_select`` call, then text.

    The newest CLI lists MCP tools as deferred: the model loads the tool with
    a ``ToolSearch`` call first (the fake refuses a call to an unloaded one).
    """

    def choose(request: RecordedRequest) -> Any:
        if SELECT in called(request):
            return TextAnswer("The ledger job runs nightly.")
        if SELECT in request.callable_tools:
            return ToolUse(SELECT, {"query": "when does the ledger job run?"})
        return ToolUse("ToolSearch", {"query": f"select:{SELECT}"})

    api.respond(Dynamic(choose))
    try:
        since = len(api.requests)
        done, _ = user.run(
            cwd,
            "-p",
            "When does the ledger job run?",
            "--output-format",
            "json",
            "--allowedTools",
            "mcp__memoryd__memory_select",
        )
    finally:
        api.respond(TextAnswer("Done."))
    assert done.returncode == 0, done.stderr + done.stdout
    return main_requests(api, since)


def seed_ledger(user: Claude, name: str) -> Path:
    checkout = user.home / name
    memdir = seed(user, checkout)
    write_memory(
        memdir / "project_ledger.md",
        "Invoices are generated by the ledger service nightly",
        mtype="project",
        body=f"The ledger job ({TOKEN}) runs at 02:00 UTC.",
    )
    (memdir / "feedback_pytest_xdist_gotcha.md").unlink()  # the one token holder
    return checkout


def test_mcp_tools_are_there_on_the_first_prompt_and_answer(
    users: Callable[[str], Claude], api: FakeMessagesAPI
) -> None:
    user = users("mcp")
    requests = ask_with_the_tool(user, api, seed_ledger(user, "mcp"))
    wanted = {SELECT, "mcp__memoryd__memory_status"}
    first = requests[0]
    if wanted <= first.callable_tools:  # listed with their schemas (2.1.197)
        assert called(requests[-1]) == [SELECT]
    else:  # named for ToolSearch, loaded by it, then called (the newest CLI)
        listed = {t["name"] for t in first.body["tools"]}
        assert "ToolSearch" in listed
        assert all(name in json.dumps(first.body) for name in wanted)
        assert called(requests[-1]) == ["ToolSearch", SELECT]
    result = tool_results(requests[-1])[-1]
    # memoryd's answer, with the memory's text: the model need not read the file. (Claude
    # Code hands the model a tool's structuredContent as JSON when there is one.)
    (memory,) = json.loads(result)["selected"]
    assert (memory["filename"], memory["type"]) == ("project_ledger.md", "project")
    assert TOKEN in memory["text"]


def test_the_tool_does_not_repeat_what_the_hook_gave(
    users: Callable[[str], Claude], api: FakeMessagesAPI
) -> None:
    user = users("full")
    requests = ask_with_the_tool(user, api, seed_ledger(user, "both"))
    assert any(HOOKED in t and TOKEN in t for t in texts(requests[0]))
    result = tool_results(requests[-1])[-1]
    assert json.loads(result)["selected"] == [] and TOKEN not in result


def test_a_memory_in_the_nested_format_arrives_with_its_type(
    hooked: Claude, api: FakeMessagesAPI
) -> None:
    checkout = hooked.home / "nested"
    memdir = seed(hooked, checkout)
    (memdir / "feedback_pytest_xdist_gotcha.md").unlink()
    request, _, _ = run_prompt(hooked, api, checkout, "How do I run the pytest suite here?")
    (injected,) = [t for t in texts(request) if HOOKED in t]
    block = injected.split("reference_pytest_usage.md", 1)[1]
    assert "A reference memory" in block and "[[feedback-pytest-xdist-gotcha]]" in block
