"""``memory_select`` answered by the configured OpenAI-compatible judge passes the MCP client's
check of its structured result against the tool's output schema (the reply names that ranker)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from daemon_fixtures import DaemonProc, write_memory
from fake_openai_api import (
    FakeOpenAI,
    fake_openai_api_fixture,  # noqa: F401 (registers the fixture)
    picks,
)
from mcp import ClientSession, StdioServerParameters, stdio_client


def test_a_judges_answer_fits_the_select_tools_output_schema(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path, fake_openai_api: FakeOpenAI
) -> None:
    root = tmp_path / "mem"
    write_memory(root / "project_ledger.md", "Invoices are posted to the ledger nightly")
    write_memory(root / "project_currency.md", "Invoice amounts in the ledger are cents")
    d = make_daemon(roots=[root], start=False)
    conf = d.home / "config" / "memoryd" / "config.yaml"
    conf.parent.mkdir(parents=True)
    conf.write_text(
        f"openai: {{base_url: '{fake_openai_api.base_url}', model: fake-model, timeout: 5}}\n"
    )
    d.env["NO_PROXY"] = "127.0.0.1,localhost"
    d.start()
    fake_openai_api.respond(picks("project_ledger.md"))
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memoryd", "mcp"],
        env={**d.env, "MEMORYD_SOCKET": str(d.socket)},
    )
    got: dict[str, Any] = {}

    async def main() -> None:
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool(
                "memory_select", {"query": "how do invoices reach the ledger?", "dir": str(root)}
            )
            got.update(result.structured_content or {})

    anyio.run(main)
    assert got["ranker"] == "openai"
    assert [m["filename"] for m in got["selected"]] == ["project_ledger.md"]
