"""The memory-file parser on real files: every bad-file case gets its own message."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import run_unprivileged

from memoryd.indexer.parse import HEAD_BYTES, MAX_FILE_BYTES, classify, parse_file
from memoryd.indexer.records import ERROR_PARSE, ERROR_READ, ParsedFile

GOOD = b"---\nname: Good one\ndescription: a fine memory\ntype: reference\n---\nBody text.\n"


def parse(path: Path) -> ParsedFile:
    size = path.stat().st_size if path.exists() else 0
    return parse_file(str(path), path.name, size)


def write(tmp_path: Path, data: bytes | str, filename: str = "feedback_x.md") -> Path:
    path = tmp_path / filename
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)
    return path


def test_good_memory(tmp_path: Path) -> None:
    rec = parse(write(tmp_path, GOOD))
    assert rec.error is None and rec.warning is None
    assert (rec.kind, rec.name, rec.description, rec.type) == (
        "memory",
        "Good one",
        "a fine memory",
        "reference",
    )
    assert rec.body == "Body text.\n"
    assert len(rec.content_hash) == 32


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("just some notes\n", "no frontmatter: the file does not start with a '---' line"),
        ("", "no frontmatter: the file is empty"),
        ("+++\ntitle = 'x'\n+++\nbody\n", "the file opens with '+++' (TOML)"),
        (
            "# Heading\n\n---\ndescription: late\n---\n",
            "no frontmatter at the start of the file: a '---' block opens on line 3",
        ),
        ("---- \ndescription: x\n---\n", "the first line is not exactly '---'"),
        ("---\ndescription: never closed\nbody\n", "unterminated frontmatter"),
        ("---", "unterminated frontmatter"),
        (
            # Not plain "key: value" lines either (the list item), so not read leniently.
            "---\nname: x\ndescription: has: colon\n- item\n---\n",
            "YAML syntax error in frontmatter at line 3",
        ),
        ('---\ndescription: "unclosed\ntype: user\n---\n', "YAML syntax error in frontmatter"),
        ("---\ndescription: d\ntype: [user\n---\n", "YAML syntax error in frontmatter"),
        ("---\n- a\n- b\n---\n", "frontmatter is a YAML list, not a mapping"),
        ("---\njust a string\n---\n", "frontmatter is a YAML string, not a mapping"),
        ("---\n42\n---\n", "frontmatter is a YAML number, not a mapping"),
        ("---\n---\nbody\n", "frontmatter is empty"),
        ("---\nname: x\ntype: user\n---\n", "frontmatter has no 'description'"),
        ("---\ndescription:\n---\n", "'description' must be a string, got nothing"),
        ("---\ndescription: [a, b]\n---\n", "'description' must be a string, got list"),
        ("---\ndescription: 12\n---\n", "'description' must be a string, got int"),
        ("---\ndescription: yes\n---\n", "'description' must be a string, got bool"),
        ('---\ndescription: "  "\n---\n', "'description' is empty"),
        ("---\nname: [x]\ndescription: d\n---\n", "'name' must be a string, got list"),
        (
            "---\ndescription: d\ntype: gotcha\n---\n",
            "invalid type 'gotcha' (expected one of user, feedback, project, reference)",
        ),
    ],
)
def test_bad_frontmatter(tmp_path: Path, content: str, fragment: str) -> None:
    rec = parse(write(tmp_path, content))
    assert rec.error is not None
    assert fragment in rec.error
    assert rec.error_kind == ERROR_PARSE


def test_non_utf8(tmp_path: Path) -> None:
    rec = parse(write(tmp_path, GOOD + b"caf\xe9\n"))
    assert rec.error == f"not valid UTF-8: byte 0xe9 at offset {len(GOOD) + 3}"


def test_nul_byte(tmp_path: Path) -> None:
    rec = parse(write(tmp_path, GOOD + b"ab\x00cd"))
    assert rec.error == f"binary file: contains a NUL byte at offset {len(GOOD) + 2}"


def test_bom_and_crlf_parse_fine(tmp_path: Path) -> None:
    bom = parse(write(tmp_path, b"\xef\xbb\xbf" + GOOD, "bom.md"))
    crlf = parse(write(tmp_path, GOOD.replace(b"\n", b"\r\n"), "crlf.md"))
    both = parse(write(tmp_path, b"\xef\xbb\xbf" + GOOD.replace(b"\n", b"\r\n"), "both.md"))
    for rec in (bom, crlf, both):
        assert rec.error is None, rec.error
        assert (rec.name, rec.description, rec.type) == ("Good one", "a fine memory", "reference")
        assert rec.body == "Body text.\n"


def _oversized(tmp_path: Path, filler: bytes) -> Path:
    # After the head, bytes that would fail the parse if they were read.
    head = GOOD + b"x" * (HEAD_BYTES - len(GOOD))
    return write(tmp_path, head + filler * (MAX_FILE_BYTES // len(filler) + 10), "big.md")


def test_oversized_file_reads_only_the_head(tmp_path: Path) -> None:
    path = _oversized(tmp_path, b"\x00\xff")
    size = path.stat().st_size
    rec = parse_file(str(path), path.name, size)
    # The NUL and invalid bytes past the head were never read.
    assert rec.error is None, rec.error
    assert (rec.name, rec.description) == ("Good one", "a fine memory")
    assert rec.warning is not None
    assert f"file is {size:,} bytes, over the 1024 KiB cap" in rec.warning
    assert "only its first 64 KiB were read" in rec.warning
    assert len(rec.body.encode()) <= HEAD_BYTES


def test_file_that_grew_past_the_cap_after_stat(tmp_path: Path) -> None:
    path = _oversized(tmp_path, b"\x00\xff")
    rec = parse_file(str(path), path.name, 100)  # stale size from an earlier stat
    assert rec.error is None, rec.error
    assert rec.warning is not None and "only its first 64 KiB were read" in rec.warning


def test_file_that_grew_under_the_cap_after_stat_is_read_whole(tmp_path: Path) -> None:
    # The read asks for the stat's size plus one byte; a file that grew since must
    # still be read to its end, not cut at the old size.
    path = write(tmp_path, GOOD + b"tail line\n" * 500)
    rec = parse_file(str(path), path.name, 10)
    assert rec.error is None and rec.warning is None
    assert rec.body.endswith("tail line\n") and rec.body.count("tail line") == 500


def test_file_that_shrank_after_stat_is_read_whole(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    rec = parse_file(str(path), path.name, 10_000)
    assert rec.error is None and rec.body == "Body text.\n"


def test_oversized_head_cut_inside_a_multibyte_character(tmp_path: Path) -> None:
    # 'é' is two bytes; place one so the 64 KiB head ends between them.
    head = GOOD + b"x" * (HEAD_BYTES - len(GOOD) - 1)
    path = write(tmp_path, head + "é".encode() * (MAX_FILE_BYTES // 2 + 10), "big.md")
    rec = parse(path)
    assert rec.error is None, rec.error
    assert rec.warning is not None and "only its first 64 KiB were read" in rec.warning


def test_file_exactly_at_the_cap_is_read_whole(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD + b"y" * (MAX_FILE_BYTES - len(GOOD)))
    rec = parse(path)
    assert rec.error is None and rec.warning is None
    assert rec.body.endswith("y")


def test_unreadable_file(world_tmp: Path) -> None:
    path = world_tmp / "feedback_secret.md"
    path.write_bytes(GOOD)
    path.chmod(0o000)
    rec = run_unprivileged(lambda: parse_file(str(path), path.name, len(GOOD)))
    assert rec.error == "unreadable: permission denied"
    assert rec.error_kind == ERROR_READ


def test_broken_symlink(tmp_path: Path) -> None:
    link = tmp_path / "feedback_gone.md"
    os.symlink("nowhere.md", link)
    rec = parse_file(str(link), link.name, 0)
    assert rec.error == "broken symlink: target 'nowhere.md' does not exist"
    assert rec.error_kind == ERROR_READ


def test_symlink_loop(tmp_path: Path) -> None:
    a, b = tmp_path / "a.md", tmp_path / "b.md"
    os.symlink("b.md", a)
    os.symlink("a.md", b)
    self_loop = tmp_path / "self.md"
    os.symlink("self.md", self_loop)
    for link in (a, self_loop):
        rec = parse_file(str(link), link.name, 0)
        assert rec.error is not None and rec.error.startswith("symlink loop")


def test_symlink_to_good_file_parses_only_inside_its_root(tmp_path: Path) -> None:
    target = write(tmp_path, GOOD, "real.md")
    link = tmp_path / "link.md"
    os.symlink(target.name, link)
    root = os.path.realpath(tmp_path)
    assert parse_file(str(link), link.name, 0, within=root).error is None
    outside = parse_file(str(link), link.name, 0, within=os.path.join(root, "sub"))
    assert outside.error is not None and "outside its root" in outside.error
    assert "not followed" in str(parse(link).error)  # no root: a link is never followed


# -- sessions and MEMORY.md ------------------------------------------------

SESSION_10 = """---
project-name: tasktrack
session: 1
mode: architect
status: completed
last-checkpoint: CP-CLOSE
checkpoints-approved: [CP-S0, CP-CLOSE]
checkpoint_decisions:
  CP-S0: {option: A, note: "Keep it simple"}
target-dir: app/reminders
---

## Session summary
Designed reminders.
Picked the worker.

## Steps completed
- S0: read code
"""


def test_classify() -> None:
    assert classify("MEMORY.md") == "index"
    assert classify("2025-06-02-10-30-tasktrack.md") == "session"
    assert classify("2025-06-02-10-30-my-app.md") == "session"
    assert classify("2025-06-02-tasktrack.md") == "memory"
    assert classify("feedback_x.md") == "memory"


def test_session_schema_10(tmp_path: Path) -> None:
    rec = parse(write(tmp_path, SESSION_10, "2025-06-02-10-30-tasktrack.md"))
    assert rec.error is None, rec.error
    assert rec.kind == "session"
    assert rec.meta["schema_version"] == "1.0"
    assert rec.meta["project-name"] == "tasktrack"
    assert rec.meta["session"] == 1
    assert rec.meta["checkpoints-approved"] == ["CP-S0", "CP-CLOSE"]
    assert rec.meta["checkpoint_decisions"] == {"CP-S0": {"option": "A", "note": "Keep it simple"}}
    assert "last_session_at" not in rec.meta
    assert rec.name == "tasktrack"
    assert rec.description == "Designed reminders. Picked the worker."


@pytest.mark.parametrize("version", ["1.1", '"1.1"', "'1.1'"])
def test_session_schema_11(tmp_path: Path, version: str) -> None:
    text = SESSION_10.replace(
        "---\nproject-name",
        f"---\nschema_version: {version}\nlast_session_at: 2025-06-05T16:40:00Z\nproject-name",
        1,
    )
    rec = parse(write(tmp_path, text, "2025-06-05-14-15-tasktrack.md"))
    assert rec.error is None, rec.error
    assert rec.meta["schema_version"] == "1.1"
    assert isinstance(rec.meta["last_session_at"], str)
    assert rec.meta["last_session_at"].startswith("2025-06-05T16:40:00")


def test_broken_session(tmp_path: Path) -> None:
    data = b"---\nschema_version: 1.1\nproject-name: tasktr" + b"\x00\x00\xff\xfe junk"
    rec = parse(write(tmp_path, data, "2025-03-05-16-20-tasktrack.md"))
    assert rec.kind == "session"
    assert rec.error is not None and rec.error.startswith("binary file: contains a NUL byte")


def test_memory_index_needs_no_frontmatter(tmp_path: Path) -> None:
    text = "# Memory\n\n- [Deploy](reference_deploy.md) — how to deploy\n"
    rec = parse(write(tmp_path, text, "MEMORY.md"))
    assert rec.error is None
    assert (rec.kind, rec.name) == ("index", "MEMORY")
    assert rec.body == text


def test_examples_folder_parses_cleanly() -> None:
    folder = Path(__file__).resolve().parents[1] / "examples" / "memory"
    files = sorted(folder.glob("*.md"))
    kinds = {}
    types = set()
    for path in files:
        rec = parse(path)
        assert rec.error is None, f"{path.name}: {rec.error}"
        kinds[path.name] = rec.kind
        if rec.type:
            types.add(rec.type)
    assert types == {"user", "feedback", "project", "reference"}
    assert list(kinds.values()).count("session") == 2
    assert list(kinds.values()).count("index") == 1
    assert list(kinds.values()).count("memory") >= 10
