"""bench/real_folders.py: rebuilding committed memory folders from a git copy, and checking labels.

The real folders are public repositories' text, never committed here; what is
committed is where they are (repository, commit, path, tree id) and the
labels written for them. These tests build a small repository of their own,
so they need neither the network nor a mirror.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from git_repo import Repo

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import real_folders
from real_folders import BuildError, Folder

MEMORY = """---
name: {name}
description: {description}
{typeline}
---

{body}
"""


def memory(name: str, description: str, mtype: str, nested: bool = False) -> str:
    typeline = f"metadata:\n  type: {mtype}" if nested else f"type: {mtype}"
    return MEMORY.format(name=name, description=description, typeline=typeline, body="Body.")


def make_source(tmp_path: Path) -> tuple[Repo, str, str]:
    """A repository with a ``.claude/memory`` folder; returns it, its commit and tree id."""
    repo = Repo(tmp_path / "clones" / "someone+notes")
    repo.write(
        ".claude/memory/MEMORY.md", "- [A](feedback_a.md) — a\n- [Gone](project_gone.md) — x\n"
    )
    repo.write(".claude/memory/feedback_a.md", memory("Rule A", "always do a", "feedback"))
    repo.write(
        ".claude/memory/project_b.md", memory("project-b", "b is done", "reference", nested=True)
    )
    repo.write(".claude/memory/broken.md", "no frontmatter here\n")
    repo.write(".claude/memory/sub/ignored.md", memory("x", "y", "user"))
    repo.write("README.md", "not a memory\n")
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "memories")
    commit = repo.git("rev-parse", "HEAD").strip()
    tree = repo.git("rev-parse", f"{commit}:.claude/memory").strip()
    return repo, commit, tree


def entry(commit: str, tree: str) -> Folder:
    return Folder("notes", "someone/notes", commit, ".claude/memory", tree, "MIT", "en")


def test_build_copies_the_top_level_markdown_of_the_folder_at_the_commit(tmp_path: Path) -> None:
    repo, commit, tree = make_source(tmp_path)
    repo.write(".claude/memory/later.md", memory("Later", "added after", "user"))
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "later")
    out = tmp_path / "out"
    code = real_folders.build(
        out, tmp_path / "no-mirrors", tmp_path / "clones", [entry(commit, tree)]
    )
    assert code == 0
    built = out / "projects" / "notes"
    assert sorted(p.name for p in built.iterdir()) == [
        "MEMORY.md",
        "broken.md",
        "feedback_a.md",
        "project_b.md",
    ]
    assert (built / "feedback_a.md").read_text() == memory("Rule A", "always do a", "feedback")


def test_a_tree_that_differs_from_the_manifest_is_refused(tmp_path: Path) -> None:
    repo, commit, _tree = make_source(tmp_path)
    with pytest.raises(BuildError, match="the manifest says"):
        real_folders.build_one(entry(commit, "0" * 40), repo.path, tmp_path / "out")


def test_without_a_copy_the_error_says_how_to_clone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = real_folders.build(tmp_path / "out", tmp_path, None, [entry("1" * 40, "2" * 40)])
    assert code == 1
    err = capsys.readouterr().err
    assert "git clone https://github.com/someone/notes" in err
    assert "--clones" in err


def test_a_bare_mirror_laid_out_like_fetch_is_found(tmp_path: Path) -> None:
    repo, commit, tree = make_source(tmp_path)
    mirrors = tmp_path / "mirror"
    (mirrors / "someone+notes").mkdir(parents=True)
    repo.git("clone", "-q", "--bare", str(repo.path), str(mirrors / "someone+notes" / "repo"))
    found = real_folders.find_copy(entry(commit, tree), mirrors, None)
    assert found == mirrors / "someone+notes" / "repo"


def test_habits_of_real_folders_are_counted(tmp_path: Path) -> None:
    _repo, commit, tree = make_source(tmp_path)
    out = tmp_path / "out"
    real_folders.build(out, tmp_path, tmp_path / "clones", [entry(commit, tree)])
    habits = real_folders.folder_habits(out / "projects" / "notes")
    assert habits["broken"] == ["broken.md"]
    assert habits["nested_metadata"] == ["project_b.md"]
    assert habits["name_differs"] == ["feedback_a.md"]  # "project-b" is the stem, slugged
    assert habits["prefix_disagrees"] == ["project_b.md"]  # project_ prefix, reference type
    assert habits["dangling_index_lines"] == ["project_gone.md"]
    assert habits["not_in_index"] == ["broken.md", "project_b.md"]


def test_check_reports_gold_that_breaks_the_rules(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _repo, commit, tree = make_source(tmp_path)
    out = tmp_path / "out"
    real_folders.build(out, tmp_path, tmp_path / "clones", [entry(commit, tree)])
    labels = tmp_path / "labels"
    labels.mkdir()
    ann = {"tool_usage_docs": {"git": ["project_b.md"]}, "superseded": {}}
    (labels / "annotations.json").write_text(json.dumps({"notes": ann}))

    def q(qid: str, gold: list[str], surfaced: list[str], tools: list[str]) -> str:
        return json.dumps(
            {
                "id": qid,
                "project": "notes",
                "query": "q",
                "gold": gold,
                "surfaced": surfaced,
                "recent_tools": tools,
                "kind": "direct",
            }
        )

    lines = [
        q("ok", ["feedback_a.md"], [], ["Read"]),
        q("broken-gold", ["broken.md"], [], ["Read"]),
        q("surfaced-gold", ["feedback_a.md"], ["feedback_a.md"], ["Read"]),
        q("tool-doc-gold", ["project_b.md"], [], ["Bash", "git"]),
    ]
    (labels / "queries.jsonl").write_text("\n".join(lines) + "\n")
    assert real_folders.check(out, labels) == 1
    err = capsys.readouterr().err
    assert "ok:" not in err
    assert "broken-gold: broken.md is not a usable memory" in err
    assert "surfaced-gold: gold feedback_a.md is surfaced" in err
    assert "tool-doc-gold: gold project_b.md is a usage doc of a recent tool" in err


def test_the_committed_manifest_and_labels_agree() -> None:
    """Every labelled project has a manifest entry; no entry is one of the reserved five."""
    folders = real_folders.load_manifest()
    names = {f.name for f in folders}
    labels = Path(real_folders.HERE) / "real"
    queries = [json.loads(x) for x in (labels / "queries.jsonl").read_text().splitlines() if x]
    annotations = json.loads((labels / "annotations.json").read_text())
    assert {q["project"] for q in queries} == names == set(annotations)
    reserved = {
        "calebklc/RaceIQ",
        "kmcd/xray",
        "vidarc/recommendarr",
        "BhaskarMantralaHub/vibe-planner",
        "0WAQ/gsim-ops",
    }
    assert not reserved & {f.repo for f in folders}
    assert len({f.repo for f in folders}) == len(folders) >= 8
    assert len({q["id"] for q in queries}) == len(queries)
