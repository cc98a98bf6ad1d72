"""Cached manifests keep no bodies, and outlive changes that touch no memory."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import MakeMemory
from indexed_candidates import indexed_candidates

from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
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
    candidates_for(store.conn, manifest, "")  # the first query's, built with the manifest
    pool = candidates_for(store.conn, manifest, "")
    assert pool and all(f.body == "" and c.body == "" for f, c in pool)
    by_name = {c.filename: c for _, c in pool}
    assert by_name["reference_ops_cheatsheet.md"].commands == ("kubectl",) * 3


def test_tool_docs_from_command_names_match_the_text(indexed: tuple[IndexStore, Path]) -> None:
    store, folder = indexed
    cached = [
        c for _, c in candidates_for(store.conn, ManifestCache().get(store.conn, str(folder)), "")
    ]
    from_text = indexed_candidates(folder, folder.parent / "text.db", analysed=False)
    assert "reference_ops_cheatsheet.md" in tool_usage_docs(from_text, ["kubectl"])
    for tools in TOOLS:
        assert tool_usage_docs(cached, tools) == tool_usage_docs(from_text, tools), tools


def test_a_change_that_touches_no_memory_keeps_the_cached_manifest(
    indexed: tuple[IndexStore, Path], make_memory: MakeMemory
) -> None:
    store, folder = indexed
    cache = ManifestCache()
    first = cache.get(store.conn, str(folder))
    # A session saved beside the memories moves the folder's version, nothing else.
    (folder / "2026-01-02-03-04-shop.md").write_text("---\nproject-name: shop\n---\nwork\n")
    Syncer(store).sync_tree(str(folder))
    kept = cache.get(store.conn, str(folder))
    assert kept.version > first.version
    assert kept.files is first.files and kept.relations is first.relations
    # A memory renamed with the same text and times is a change: rebuilt.
    (folder / "reference_ops_cheatsheet.md").rename(folder / "reference_ops_commands.md")
    Syncer(store).sync_tree(str(folder))
    renamed = cache.get(store.conn, str(folder))
    assert renamed.files is not first.files
    assert "reference_ops_commands.md" in {f.filename for f in renamed.files}
    # An edited memory: rebuilt, with the new text's analysis.
    make_memory("feedback_new_rule.md", "always pin okapi versions", directory=folder)
    Syncer(store).sync_tree(str(folder))
    edited = cache.get(store.conn, str(folder))
    assert "feedback_new_rule.md" in {f.filename for f in edited.files}
