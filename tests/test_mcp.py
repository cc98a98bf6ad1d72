"""``memoryd mcp`` driven by the ``mcp`` client library over stdio, against a real daemon."""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from daemon_fixtures import DaemonProc, write_memory
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent

TOOLS = {"memory_select", "memory_load_last", "memory_save", "memory_context", "memory_status"}

Session = Callable[[ClientSession], Awaitable[None]]

OUTPUT_KEYS = {
    "memory_select": {"run_id", "ranker", "selected", "candidates", "fallback"},
    "memory_load_last": {"found", "skipped"},
    "memory_save": {"path", "filename", "created", "schema_version", "dir"},
    "memory_context": {"text", "status", "scope", "findings", "sessions_read", "budget_tokens"},
    "memory_status": {"version", "pid", "state", "roots", "last_event"},
}


def with_mcp(d: DaemonProc, body: Session) -> None:
    """Start ``memoryd mcp`` as an MCP client would and run ``body`` on an initialised session."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memoryd", "mcp"],
        env={**d.env, "MEMORYD_SOCKET": str(d.socket)},
    )

    async def main() -> None:
        with (d.home / "mcp-stderr.log").open("w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                await body(session)

    anyio.run(main)
    assert "Traceback" not in (d.home / "mcp-stderr.log").read_text()


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


def test_tools_are_listed_answer_through_the_daemon_and_report_errors(seeded: DaemonProc) -> None:
    root = str(seeded.roots[0])

    async def body(session: ClientSession) -> None:
        listed = (await session.list_tools()).tools
        assert {t.name for t in listed} == TOOLS
        for tool in listed:
            assert tool.description and "Call it" in tool.description, tool.name
            assert tool.input_schema["type"] == "object"
        tools = {t.name: t for t in listed}
        assert set(tools["memory_select"].input_schema["required"]) == {"query", "dir"}
        # Every tool that takes a folder takes it the same way: one path string.
        for name in ("memory_select", "memory_load_last", "memory_save", "memory_context"):
            assert tools[name].input_schema["properties"]["dir"]["type"] == "string", name
        # save needs what the CLI needs: a folder, a project and a summary.
        assert set(tools["memory_save"].input_schema["required"]) == {
            "dir",
            "project",
            "session_summary",
        }
        for name, keys in OUTPUT_KEYS.items():
            schema = tools[name].output_schema
            assert schema is not None and schema["type"] == "object", name
            assert keys <= set(schema["properties"]), (name, schema)
            assert keys <= set(schema["required"]), (name, schema)
        selected = tools["memory_select"].output_schema["properties"]["selected"]  # type: ignore[index]
        assert selected["type"] == "array"
        item = tools["memory_select"].output_schema["$defs"]["SelectedMemory"]  # type: ignore[index]
        assert {"filename", "path", "description", "staleness"} <= set(item["properties"])

        status = payload(await session.call_tool("memory_status", {}))
        assert status["state"] == "ready"

        args = {"query": "pytest xdist workers database", "dir": root, "session_id": "m1"}
        picked = payload(await session.call_tool("memory_select", args))
        assert [s["filename"] for s in picked["selected"]] == ["feedback_pytest_xdist_gotcha.md"]
        again = payload(await session.call_tool("memory_select", args))
        assert again["selected"] == [] and again["note"] is None
        parent = str(Path(root).parent)
        wrong = payload(await session.call_tool("memory_select", {**args, "dir": parent}))
        assert wrong["note"].startswith(f"{parent} holds no memory files; did you mean {root}?")

        saved = payload(
            await session.call_tool(
                "memory_save",
                {
                    "dir": root,
                    "project": "shop",
                    "session_summary": "Split the test database per xdist worker.",
                    "active_state": "CI is green; flaky test hunt next.",
                    "key_decisions": ["One database per worker"],
                },
            )
        )
        assert saved["created"] and Path(saved["path"]).exists()

        last = payload(
            await session.call_tool("memory_load_last", {"dir": root, "project": "shop"})
        )
        assert last["found"] and last["path"] == saved["path"]
        assert "Split the test database" in last["content"]

        brief = payload(
            await session.call_tool(
                "memory_context", {"task": "fix the flaky test database", "dir": root}
            )
        )
        assert isinstance(brief["text"], str) and brief["text"]
        assert root in brief["scope"] and brief["sessions_read"]
        assert "sessions_searched" in brief  # fields beyond the schema's are kept

        quick = payload(
            await session.call_tool(
                "memory_save",
                {"dir": root, "project": "shop", "session_summary": "Only a summary this time."},
            )
        )
        assert Path(quick["path"]).read_text().count("Only a summary this time.") == 1
        # The text content mirrors the structured result for clients that only read text.
        assert json.loads(text_of(await session.call_tool("memory_status", {})))["state"]

        # Errors are tool results the agent can read, not protocol failures.
        bad = await session.call_tool("memory_load_last", {"dir": root, "project": "Not/A/Slug"})
        assert bad.is_error and "invalid_params" in text_of(bad)
        seeded.stop()
        down = await session.call_tool("memory_status", {})
        assert down.is_error
        assert "daemon is not running" in text_of(down)
        down = await session.call_tool("memory_select", {"query": "x", "dir": root})
        assert down.is_error and "memoryd serve" in text_of(down)

    with_mcp(seeded, body)
