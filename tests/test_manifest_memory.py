"""Cached manifests keep no bodies; the rules that read a body answer as from the text."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import MakeMemory

from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.select.candidates import load_directory
from memoryd.select.manifest import ManifestCache, candidates_for
from memoryd.select.tool_rules import tool_usage_docs

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "memory"
TOOLS = [["pytest"], ["kubectl"], ["helm", "pytest"], ["git"], ["Bash"]]


@pytest.fixture
def indexed(tmp_path: Path, store: IndexStore, make_memory: MakeMemory) -> tuple[IndexStore, Path]:
    folder = tmp_path / "examples"
    shutil.copytree(EXAMPLES, folder)
    # A usage doc known only from its command lines: the header names no tool.
    make_memory(
        "reference_ops_cheatsheet.md",
        "commands for the cluster",
        name="ops cheatsheet",
        type="reference",
        body="- `kubectl get pods -n shop`\n- `kubectl rollout undo deploy/api`\n"
        "- `./kubectl logs api`\n",
        directory=folder,
    )
    Syncer(store).sync_tree(str(folder))
    return store, folder


def test_cached_candidates_hold_no_body_but_their_commands(
    indexed: tuple[IndexStore, Path],
) -> None:
    store, folder = indexed
    manifest = ManifestCache().get(store.conn, str(folder))
    pool = candidates_for(store.conn, manifest, "")
    assert pool and all(f.body == "" and c.body == "" for f, c in pool)
    by_name = {c.filename: c for _, c in pool}
    assert by_name["reference_ops_cheatsheet.md"].commands == ("kubectl",) * 3


def test_tool_docs_from_command_names_match_the_text(indexed: tuple[IndexStore, Path]) -> None:
    store, folder = indexed
    cached = [
        c for _, c in candidates_for(store.conn, ManifestCache().get(store.conn, str(folder)), "")
    ]
    from_text = load_directory(folder)
    assert "reference_ops_cheatsheet.md" in tool_usage_docs(from_text, ["kubectl"])
    for tools in TOOLS:
        assert tool_usage_docs(cached, tools) == tool_usage_docs(from_text, tools), tools
