"""``memoryd mcp`` driven by the official ``mcp`` client over stdio, against a real daemon."""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from daemon_fixtures import DaemonProc, write_memory
from isolation import skip_if_user_runtime
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent

from memoryd._delivery import MAX_FILE_BYTES
from memoryd.claude_folders import memory_folder
from memoryd.integrations._hook_state import SessionState

TOOLS = {
    "memory_select",
    "memory_load_last",
    "memory_save",
    "memory_context",
    "memory_status",
    "memory_why",
}
READ_ONLY = TOOLS - {"memory_save"}

Session = Callable[[ClientSession], Awaitable[None]]

OUTPUT_KEYS = {
    "memory_select": {"run_id", "ranker", "selected", "candidates", "fallback"},
    "memory_load_last": {"found", "skipped"},
    "memory_save": {"path", "dir", "filename", "created", "schema_version"},
    "memory_context": {"text", "status", "scope", "findings", "sessions_read", "budget_tokens"},
    "memory_status": {"version", "pid", "state", "roots", "last_event", "client_socket"},
}


def with_mcp(d: DaemonProc, body: Session, env: dict[str, str] | None = None) -> None:
    """Start ``memoryd mcp`` as an MCP client would and run ``body`` on an initialised session.

    ``env`` None: the daemon's environment with its socket. Otherwise exactly
    ``env`` (the SDK adds nothing to an explicit one).
    """
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memoryd", "mcp"],
        env={**d.env, "MEMORYD_SOCKET": str(d.socket)} if env is None else env,
    )

    async def main() -> None:
        with (d.home / "mcp-stderr.log").open("w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                init = await session.initialize()
                assert init.server_info.name == "memoryd"
                assert init.capabilities.tools is not None
                await body(session)

    anyio.run(main)
    assert (d.home / "mcp-stderr.log").read_text() == ""


def text_of(result: CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, TextContent))


def payload(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, text_of(result)
    data = result.structured_content
    assert isinstance(data, dict)
    return data


@pytest.fixture
def seeded(make_daemon: Callable[..., DaemonProc], tmp_path: Path) -> DaemonProc:
    root = tmp_path / "mem"
    write_memory(
        root / "feedback_pytest_xdist_gotcha.md",
        "Gotcha: pytest -n auto makes xdist workers share one test database",
        body="Warning: with xdist every worker needs its own database suffix.",
    )
    return make_daemon(roots=[root])


def test_tools_schemas_enums_and_hints(seeded: DaemonProc) -> None:
    async def body(session: ClientSession) -> None:
        listed = (await session.list_tools()).tools
        assert {t.name for t in listed} == TOOLS
        tools = {t.name: t for t in listed}
        for tool in listed:
            assert tool.description and "Call it" in tool.description, tool.name
            assert tool.input_schema["type"] == "object"
            assert tool.annotations is not None
            assert tool.annotations.read_only_hint is (tool.name in READ_ONLY), tool.name
            assert tool.annotations.destructive_hint is False, tool.name
        save = tools["memory_save"]
        assert save.annotations is not None and save.annotations.idempotent_hint is True
        props = save.input_schema["properties"]
        assert props["status"]["enum"] == ["in-progress", "paused", "completed"]
        assert props["mode"]["enum"] == ["architect", "express"]
        assert set(save.input_schema["required"]) == {"project", "session_summary"}
        assert set(tools["memory_select"].input_schema["required"]) == {"query"}
        # Every tool that takes a folder takes it the same way: one path string.
        for name in ("memory_select", "memory_load_last", "memory_save", "memory_context"):
            assert tools[name].input_schema["properties"]["dir"]["type"] == "string", name
        for name, keys in OUTPUT_KEYS.items():
            schema = tools[name].output_schema
            assert schema is not None and schema["type"] == "object", name
            assert keys <= set(schema["properties"]), (name, schema)
            assert keys <= set(schema["required"]), (name, schema)
        ranker = tools["memory_select"].output_schema["properties"]["ranker"]  # type: ignore[index]
        assert ranker["enum"] == ["local", "anthropic", "openai"]
        item = tools["memory_select"].output_schema["properties"]["selected"]["items"]  # type: ignore[index]
        assert {"filename", "path", "description", "staleness", "text"} <= set(item["properties"])

    with_mcp(seeded, body)


def test_tools_answer_through_the_daemon_and_report_errors(seeded: DaemonProc) -> None:
    root = str(seeded.roots[0])

    async def body(session: ClientSession) -> None:
        status = await session.call_tool("memory_status", {})
        assert payload(status)["state"] == "ready"
        assert payload(status)["client_socket"]["reason"] == "$MEMORYD_SOCKET"
        # A short summary for the model, not the whole structure pretty-printed.
        assert text_of(status).startswith("memoryd ") and "{" not in text_of(status)
        assert f"socket {seeded.socket} (chosen by $MEMORYD_SOCKET)" in text_of(status)

        args = {"query": "pytest xdist workers database", "dir": root, "session_id": "m1"}
        picked = await session.call_tool("memory_select", args)
        (entry,) = payload(picked)["selected"]
        assert entry["filename"] == "feedback_pytest_xdist_gotcha.md"
        # The memory's text comes with it, so the model need not read the file.
        assert "its own database suffix" in entry["text"]
        assert "its own database suffix" in text_of(picked)
        assert "0 days old." in text_of(picked)
        # Shown in session m1: not shown again.
        again = payload(await session.call_tool("memory_select", args))
        assert again["selected"] == [] and again["note"] is None
        parent = str(Path(root).parent)
        wrong = await session.call_tool("memory_select", {**args, "dir": parent})
        assert payload(wrong)["note"].startswith(f"{parent} holds no memory files; did you mean")
        assert text_of(wrong) == payload(wrong)["note"]

        saved = payload(
            await session.call_tool(
                "memory_save",
                {
                    "dir": root,
                    "project": "shop",
                    "session_summary": "Split the test database per xdist worker.",
                    "active_state": "CI is green; flaky test hunt next.",
                    "key_decisions": ["One database per worker"],
                    "status": "in-progress",
                    "checkpoint_decisions": {"CP-S1": {"option": "B"}},
                },
            )
        )
        assert saved["created"] and Path(saved["path"]).exists()

        last = await session.call_tool("memory_load_last", {"dir": root, "project": "shop"})
        assert payload(last)["found"] and payload(last)["path"] == saved["path"]
        assert payload(last)["fields"]["checkpoint_decisions"] == {"CP-S1": {"option": "B"}}
        assert "Split the test database" in text_of(last)
        assert text_of(last).startswith(payload(last)["resume_line"])

        brief = payload(
            await session.call_tool(
                "memory_context", {"task": "fix the flaky test database", "dir": root}
            )
        )
        assert isinstance(brief["text"], str) and brief["text"]
        assert root in brief["scope"] and brief["sessions_read"]
        # Each output schema names every field the daemon sent (it is made from the reply types).
        schemas = {t.name: t.output_schema or {} for t in (await session.list_tools()).tools}
        answers = {
            "memory_status": payload(status),
            "memory_select": payload(picked),
            "memory_save": saved,
            "memory_load_last": payload(last),
            "memory_context": brief,
        }
        for name, answer in answers.items():
            assert set(answer) <= set(schemas[name]["properties"]), name
        assert set(entry) <= set(
            schemas["memory_select"]["properties"]["selected"]["items"]["properties"]
        )

        # Errors are tool results the agent can read, not protocol failures.
        bad = await session.call_tool("memory_load_last", {"dir": root, "project": "Not/A/Slug"})
        assert bad.is_error and "'project' must be a slug" in text_of(bad)
        typo = await session.call_tool("memory_select", {"query": "x", "dri": root})
        assert typo.is_error and "unknown argument(s): dri" in text_of(typo)
        # No dir, no Claude Code, no roots: the working directory's folder, which has none.
        nodir = await session.call_tool("memory_select", {"query": "x"})
        assert nodir.is_error and "memory directory not found" in text_of(nodir)
        seeded.stop()
        down = await session.call_tool("memory_status", {})
        assert down.is_error
        assert "daemon is not running" in text_of(down)
        down = await session.call_tool("memory_select", {"query": "x", "dir": root})
        assert down.is_error and "memoryd serve" in text_of(down)

    with_mcp(seeded, body)


def test_under_claude_code_the_project_folder_and_the_hooks_session_record_are_used(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = make_daemon(start=False)
    project = tmp_path / "shop_api"
    project.mkdir()
    memdir = memory_folder(str(project), d.env).directory
    write_memory(
        memdir / "feedback_pytest_xdist.md",
        "Gotcha: pytest xdist workers share one database in this repo",
        body="Give every xdist worker its own database suffix.\n" + "worker notes " * 1000,
    )
    write_memory(
        memdir / "feedback_pytest_coverage.md",
        "Gotcha: coverage reports miss the plugins folder",
        body="Pass --cov=plugins explicitly; the default source list skips it.",
    )
    d.start()
    monkeypatch.setenv("XDG_STATE_HOME", d.env["XDG_STATE_HOME"])
    hook_shown = SessionState("cc-session")
    hook_shown.record([str(memdir / "feedback_pytest_coverage.md")], 100)
    env = {
        **d.env,
        "MEMORYD_SOCKET": str(d.socket),
        "CLAUDE_PROJECT_DIR": str(project),
        "CLAUDE_CODE_SESSION_ID": "cc-session",
    }

    async def body(session: ClientSession) -> None:
        # The hook showed the coverage one in this session already.
        shown = await session.call_tool("memory_select", {"query": "coverage misses plugins"})
        assert payload(shown)["selected"] == []
        result = await session.call_tool("memory_select", {"query": "xdist worker database"})
        names = [s["filename"] for s in payload(result)["selected"]]
        assert names == ["feedback_pytest_xdist.md"]
        text = payload(result)["selected"][0]["text"]
        assert len(text.split("\n[... ")[0].encode()) <= MAX_FILE_BYTES
        assert "cut by memoryd" in text

    with_mcp(d, body, env)
    # ... and what the tool handed over is in the record the hook reads next.
    assert SessionState("cc-session").shown == [
        str(memdir / "feedback_pytest_coverage.md"),
        str(memdir / "feedback_pytest_xdist.md"),
    ]


def test_a_scrubbed_environment_still_says_which_socket_and_why(seeded: DaemonProc) -> None:
    """The SDK passes only HOME, PATH, SHELL, TERM, USER, LOGNAME to a stdio server."""
    skip_if_user_runtime()
    scrubbed = {k: v for k, v in seeded.env.items() if k in ("HOME", "PATH")}

    async def body(session: ClientSession) -> None:
        down = await session.call_tool("memory_status", {})
        assert down.is_error
        assert "socket chosen by $XDG_RUNTIME_DIR is unset" in text_of(down)

    with_mcp(seeded, body, scrubbed)


def test_the_protocol_edges_are_json_rpc_errors(seeded: DaemonProc) -> None:
    """Raw lines, as a client other than the SDK might send them."""
    import subprocess  # noqa: PLC0415

    lines = [
        "not json",
        json.dumps([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]),
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": {}}),
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {}}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json.dumps({"jsonrpc": "2.0", "id": 4, "method": "ping"}),
        json.dumps(
            {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "rm_rf"}}
        ),
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "memoryd", "mcp"],
        input="\n".join(lines) + "\n",
        env={**seeded.env, "MEMORYD_SOCKET": str(seeded.socket)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r.get("error", {}).get("code") for r in replies] == [
        -32700,
        -32600,
        -32601,
        None,
        None,
        -32602,
    ]
    assert replies[3]["result"]["protocolVersion"] == "2025-11-25"
    assert replies[4] == {"jsonrpc": "2.0", "id": 4, "result": {}}
    assert proc.returncode == 0 and proc.stderr == ""
