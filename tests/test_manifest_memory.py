"""Cached manifests keep no bodies; the rules that read a body answer as from the text."""

from __future__ import annotations

import shutil
from pathlib import Path

from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.select.candidates import load_directory
from memoryd.select.manifest import ManifestCache, candidates_for
from memoryd.select.tool_rules import tool_usage_docs

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "memory"
TOOLS = [["pytest"], ["kubectl"], ["helm", "pytest"], ["git"], ["Bash"]]


def _indexed(tmp_path: Path) -> tuple[IndexStore, Path]:
    folder = tmp_path / "memory"
    shutil.copytree(EXAMPLES, folder)
    # Usage docs known only from their command lines: the header names no tool.
    (folder / "reference_ops_cheatsheet.md").write_text(
        "---\nname: ops cheatsheet\ndescription: commands for the cluster\ntype: reference\n"
        "---\n\n- `kubectl get pods -n shop`\n- `kubectl rollout undo deploy/api`\n"
        "- `./kubectl logs api`\n",
        encoding="utf-8",
    )
    store = IndexStore(tmp_path / "index.db")
    Syncer(store).sync_tree(str(folder))
    return store, folder


def test_cached_candidates_hold_no_body_but_their_commands(tmp_path: Path) -> None:
    store, folder = _indexed(tmp_path)
    manifest = ManifestCache().get(store.conn, str(folder))
    pool = candidates_for(store.conn, manifest, "")
    assert pool and all(f.body == "" and c.body == "" for f, c in pool)
    by_name = {c.filename: c for _, c in pool}
    assert by_name["reference_ops_cheatsheet.md"].commands == ("kubectl",) * 3
    store.close()


def test_tool_docs_from_command_names_match_the_text(tmp_path: Path) -> None:
    store, folder = _indexed(tmp_path)
    cached = [
        c for _, c in candidates_for(store.conn, ManifestCache().get(store.conn, str(folder)), "")
    ]
    from_text = load_directory(folder)
    assert "reference_ops_cheatsheet.md" in tool_usage_docs(from_text, ["kubectl"])
    for tools in TOOLS:
        assert tool_usage_docs(cached, tools) == tool_usage_docs(from_text, tools), tools
    store.close()
