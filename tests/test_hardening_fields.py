"""A name or description is capped once, at parse time, visibly; an older index is re-read.

A megabyte written into a memory's ``description`` used to come back whole
in every reply. Now the parser keeps the first
:data:`~memoryd.indexer.parse.MAX_FIELD_CHARS` characters with a marker and
a warning, so the index, the rankers and every reply hold the same bounded
value. An index written before is parsed again on upgrade (migration 012),
so rows holding what the old parser made of a file (raw new credential
shapes, uncapped text, lenient headers seen as broken) are redone.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from daemon_fixtures import DaemonProc

from memoryd.indexer.parse import MAX_FIELD_CHARS, parse_bytes
from memoryd.indexer.records import KIND_MEMORY

HUGE = 1_000_000


def huge_memory(description: str) -> str:
    return f"---\nname: release checklist\ndescription: {description}\ntype: project\n---\nbody\n"


def test_a_huge_description_is_cut_with_a_marker_and_a_warning() -> None:
    parsed = parse_bytes(huge_memory("release " * (HUGE // 8)).encode(), KIND_MEMORY)
    assert parsed.error is None and parsed.description is not None
    assert len(parsed.description) < MAX_FIELD_CHARS + 40
    assert parsed.description.endswith(f"… [cut: {HUGE - 1:,} characters]")
    assert parsed.warning is not None and "only its first 1,000 are kept" in parsed.warning


def test_a_short_description_is_untouched() -> None:
    parsed = parse_bytes(huge_memory("release steps, in order").encode(), KIND_MEMORY)
    assert (parsed.description, parsed.warning) == ("release steps, in order", None)


def test_a_cut_never_leaves_part_of_a_credential() -> None:
    token = "ghp_" + "Q1w2E3r4T5" * 4
    description = "x" * (MAX_FIELD_CHARS - 10) + f" {token} " + "y" * 5000
    parsed = parse_bytes(huge_memory(description).encode(), KIND_MEMORY)
    assert parsed.secrets and parsed.description is not None
    assert "Q1w2E3" not in parsed.description and "ghp_" not in parsed.description


def test_every_reply_carries_the_capped_description(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    root = tmp_path / "memory"
    root.mkdir()
    (root / "project_release.md").write_text(huge_memory("release checklist " * (HUGE // 18)))
    d = make_daemon(roots=[root])
    listed = d.call("list", {"dir": str(root)})["files"][0]
    picked = d.call("select", {"dir": str(root), "query": "the release checklist"})["selected"]
    assert [s["filename"] for s in picked] == ["project_release.md"]
    for description in (listed["description"], picked[0]["description"]):
        assert len(description) < MAX_FIELD_CHARS + 40 and description.endswith("characters]")
    assert "only its first 1,000 are kept" in listed["warning"]
