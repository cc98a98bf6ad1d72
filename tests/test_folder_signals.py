"""What real folders say besides each memory's own header, read by the selector.

MEMORY.md hooks as second descriptions, types under `metadata:` or only in the
filename prefix, names unlike filenames, index lines for files that do not exist, and command lines
in fenced code blocks.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from indexed_candidates import indexed_candidates

from memoryd.indexer.parse import parse_bytes
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.select.candidates import Candidate, effective_type, index_hooks
from memoryd.select.local import LocalRanker
from memoryd.select.selector import Selector
from memoryd.select.tool_rules import commands_in, tool_usage_docs
from memoryd.select.wiring import select_unrecorded


def mem(fn: str, name: str, desc: str, body: str = "", **kw: object) -> Candidate:
    return Candidate(fn, name, desc, kw.pop("type_", "feedback"), body, 0.0, **kw)  # type: ignore[arg-type]


def write(folder: Path, fn: str, header: str, body: str = "Body.\n") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / fn).write_text(f"---\n{header.strip()}\n---\n\n{body}", encoding="utf-8")


def test_type_and_links_under_nested_metadata_are_read() -> None:
    parsed = parse_bytes(
        b"---\nname: ref-skills-repo\ndescription: Local git repo of the skills\n"
        b"metadata:\n  type: reference\n  originSessionId: abc\n"
        b"related: [feedback_local_first.md]\n"
        b"updated: 2026-05-28\n---\nBody\n",
        "memory",
    )
    assert parsed.error is None
    assert parsed.type == "reference"
    assert parsed.meta == {
        "header": {"related": ["feedback_local_first.md"], "updated": "2026-05-28"}
    }


def test_the_filename_prefix_gives_the_type_only_when_the_header_has_none() -> None:
    assert effective_type(None, "reference_vpn.md") == "reference"
    assert effective_type("feedback", "reference_vpn.md") == "feedback"
    assert effective_type(None, "notes.md") is None
    assert effective_type(None, "reference.md") is None


FOLDER = [
    mem("feedback_pdf_fitz.md", "PDF 文字用 fitz 擷取", "不要用 Read 讀 PDF"),
    mem("project_vpn.md", "Office VPN", "How to reach staging", type_="project"),
    mem("feedback-no-emoji.md", "no-emoji", "Plain headings"),
]
INDEX = """# Memory index

## Feedback
- [PDF extraction](feedback_pdf_fitz.md) — extract textbook text with PyMuPDF, never the Read tool
- [[no-emoji]]: README headings without icons or emoji
- [Gone](project_pyright_gaps.md) — a file that no longer exists
- `project_vpn.md` — WireGuard tunnel to the bastion host
"""


def test_index_lines_become_hooks_for_the_files_that_exist() -> None:
    hooks = index_hooks(INDEX, FOLDER)
    assert hooks == {
        "feedback_pdf_fitz.md": (
            "PDF extraction extract textbook text with PyMuPDF, never the Read tool"
        ),
        "feedback-no-emoji.md": "README headings without icons or emoji",
        "project_vpn.md": "WireGuard tunnel to the bastion host",
    }


def test_a_prompt_worded_like_the_hook_finds_the_memory() -> None:
    query = "extract the textbook text from this PDF with PyMuPDF"
    assert LocalRanker().ranked(query, FOLDER)[0] == []  # only the hook says PyMuPDF and textbook
    hooks = index_hooks(INDEX, FOLDER)
    hooked = [dataclasses.replace(c, hook=hooks.get(c.filename, "")) for c in FOLDER]
    assert [s.filename for s in LocalRanker().ranked(query, hooked)[0]] == ["feedback_pdf_fitz.md"]


def test_hooks_reach_the_selector_through_the_index(tmp_path: Path) -> None:
    folder = tmp_path / "mem"
    write(
        folder,
        "feedback_pdf_fitz.md",
        "name: PDF 文字用 fitz 擷取\ndescription: 不要用 Read 讀 PDF\ntype: feedback",
    )
    write(
        folder,
        "project_vpn.md",
        "name: Office VPN\ndescription: How to reach staging\ntype: project",
    )
    (folder / "MEMORY.md").write_text(INDEX, encoding="utf-8")
    store = IndexStore(tmp_path / "index.db")
    try:
        Syncer(store).sync_tree(str(folder))
        selector = Selector()
        params = {
            "query": "extract the textbook text from this PDF with PyMuPDF",
            "dir": str(folder),
        }
        got = select_unrecorded(selector, store.conn, params)
        assert [s["filename"] for s in got["selected"]] == ["feedback_pdf_fitz.md"]
        # Without the index line, the same prompt finds nothing.
        (folder / "MEMORY.md").write_text("- [PDF](feedback_pdf_fitz.md)\n", encoding="utf-8")
        Syncer(store).sync_tree(str(folder))
        assert select_unrecorded(selector, store.conn, params)["selected"] == []
    finally:
        store.close()


def test_commands_in_shell_code_blocks_count_prose_in_other_blocks_does_not() -> None:
    body = (
        "Keep it local: `git push` is never run.\n\n```bash\n$ git -C ~/cmds status\n"
        "git -C ~/cmds add x\nsudo git commit -m msg\n```\n\n```python\nimport os\n```\n"
    )
    assert commands_in(body) == ("git", "git", "git", "git")


def test_a_reference_whose_code_runs_the_tool_is_its_usage_doc(tmp_path: Path) -> None:
    write(
        tmp_path,
        "ref_skills_repo.md",
        "name: ref-skills-repo\ndescription: Repo local de los skills\n"
        "metadata:\n  type: reference",
        "Comandos:\n\n```\ngit -C ~/cmds status\ngit -C ~/cmds add <file>\n"
        "git -C ~/cmds commit\n```\n",
    )
    write(
        tmp_path,
        "feedback_git_gotcha.md",
        "name: git gotcha\ndescription: never force push\ntype: feedback",
        "```\ngit push --force\n```\n",
    )
    cands = indexed_candidates(tmp_path, tmp_path / "index.db")
    assert tool_usage_docs(cands, ["Bash", "git"]) == {"ref_skills_repo.md"}


def test_header_facts_are_bounded() -> None:
    related = ", ".join(f"m{i}.md" for i in range(100))
    long_status = "x" * 5000
    parsed = parse_bytes(
        f"---\ndescription: d\nrelated: [{related}]\nstatus: {long_status}\n---\n".encode(),
        "memory",
    )
    header = parsed.meta["header"]
    assert len(header["related"]) == 50
    assert len(header["status"]) == 300
