"""``memoryd mcp``'s argument check: the methods' own decoder, behind the tools' schemas."""

from __future__ import annotations

import pytest

from memoryd.errors import InvalidParams
from memoryd.integrations.mcp_tools import BY_NAME, check_arguments


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("memory_select", {"query": "x", "allow_secrets": True}),
        ("memory_select", {"query": "x", "cwd": "/tmp"}),
        ("memory_select", {"query": "x", "ranker": "anthropic"}),
        ("memory_load_last", {"project": "p", "reveal_secrets": True}),
        ("memory_save", {"project": "p", "session_summary": "s", "replace": True}),
        ("memory_status", {"dir": "/tmp"}),
    ],
)
def test_a_param_the_tool_leaves_out_is_an_unknown_argument(
    tool: str, args: dict[str, object]
) -> None:
    with pytest.raises(InvalidParams, match="unknown argument"):
        check_arguments(tool, args)


@pytest.mark.parametrize(
    ("tool", "args", "problem"),
    [
        ("memory_select", {"query": " "}, "'query' must not be empty"),
        ("memory_select", {"query": "x", "limit": 6}, "'limit' must be an integer from 1 to 5"),
        ("memory_select", {"query": "x", "dir": ["/a"]}, "'dir' must be a directory path"),
        ("memory_why", {"dir": None}, "'dir' must be a directory path"),
        ("memory_context", {"task": "x", "more_dirs": [""]}, "'more_dirs' must be a list"),
        ("memory_save", {"project": "p"}, "'session_summary' is required"),
        ("memory_save", {"project": "p", "session_summary": ""}, "'session_summary' is required"),
        ("memory_why", {"last": 0}, "'last' must be an integer from 1 to 50"),
    ],
)
def test_a_bad_argument_is_named(tool: str, args: dict[str, object], problem: str) -> None:
    with pytest.raises(InvalidParams, match=problem):
        check_arguments(tool, args)


def test_what_each_tool_offers_passes_without_a_folder() -> None:
    check_arguments("memory_select", {"query": "x", "surfaced": ["a.md"], "limit": 5})
    check_arguments("memory_context", {"task": "x", "more_dirs": ["/a"], "budget_tokens": 100})
    check_arguments("memory_save", {"project": "p", "session_summary": "s", "status": "paused"})
    check_arguments("memory_why", {"session_id": "s", "last": 50})
    check_arguments("memory_load_last", {"project": "p", "dir": ""})  # "": the default folder
    for name in BY_NAME:
        assert BY_NAME[name]["inputSchema"]["additionalProperties"] is False
