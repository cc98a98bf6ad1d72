"""Citation extraction: what counts as a pointer into the code, and how the table follows files."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import MakeMemory

from memoryd.check_replies import Verdict
from memoryd.indexer.citations import KIND_DIR, KIND_FILE, KIND_NAME, Citation, extract
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.staleness.render import caution

CASES = [
    ("see `src/billing/tax.py` first", [Citation("src/billing/tax.py", KIND_FILE)]),
    ("broken at src/api/routes.ts:42.", [Citation("src/api/routes.ts", KIND_FILE, 42)]),
    ("lines `lib/x.rs:10-20`", [Citation("lib/x.rs", KIND_FILE, 10)]),
    ("[the guide](docs/guide.md#setup)", [Citation("docs/guide.md", KIND_FILE)]),
    ("everything in stacks/prod/ is live", [Citation("stacks/prod", KIND_DIR)]),
    ("the `src/billing` package", [Citation("src/billing", KIND_DIR)]),
    ("pin `package-lock.json`", [Citation("package-lock.json", KIND_NAME)]),
    ("run `pytest tests/test_api.py`", [Citation("tests/test_api.py", KIND_FILE)]),
    ("CI is .github/workflows/ci.yml", [Citation(".github/workflows/ci.yml", KIND_FILE)]),
    ("./scripts/deploy.sh does it", [Citation("scripts/deploy.sh", KIND_FILE)]),
    ("template in `docs/pg.conf.example`", [Citation("docs/pg.conf.example", KIND_FILE)]),
    # Not citations: URLs, hosts, globs, absolute / home / parent paths, dotted names, prose.
    ("docs at https://example.com/a/b.py", []),
    ("clone github.com/org/repo/blob/main.py", []),
    ("`www.ops.example.com`", []),
    ("all of src/**/*.py and tests/*.py", []),
    ("config in /usr/lib/app/conf.yaml or /etc/x.conf", []),
    ("my ~/.config/app/settings.json", []),
    ("one level up ../other/repo.py", []),
    ("`java.time` and `unittest.mock.patch`", []),
    ("read/write access and/or retries", []),
    ("[other memory](feedback_testing.md)", []),
    ("`$HOME/bin/tool.sh`", []),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_extraction_table(text: str, expected: list[Citation]) -> None:
    assert extract(None, text) == expected


def test_description_and_body_both_count_once_each() -> None:
    got = extract("tax rules live in src/tax.py", "Edit src/tax.py and `src/rates.py`.")
    assert sorted(c.target for c in got) == ["src/rates.py", "src/tax.py"]


def _citations(store: IndexStore, path: Path) -> list[str]:
    rows = store.conn.execute(
        "SELECT target FROM citations WHERE path = ? ORDER BY target", (str(path),)
    )
    return [r[0] for r in rows]


def test_the_citations_table_follows_each_file(
    store: IndexStore, memdir: Path, make_memory: MakeMemory
) -> None:
    memory = make_memory("project_tax.md", body="See `src/tax.py` and src/rates.py.\n")
    Syncer(store).sync_tree(str(memdir))
    assert _citations(store, memory) == ["src/rates.py", "src/tax.py"]

    make_memory("project_tax.md", body="Only `src/taxes.py` now.\n")
    Syncer(store).sync_tree(str(memdir))
    assert _citations(store, memory) == ["src/taxes.py"]

    memory.unlink()
    Syncer(store).sync_tree(str(memdir))
    assert _citations(store, memory) == []


def test_session_files_and_the_index_are_not_checked(
    store: IndexStore, memdir: Path, make_memory: MakeMemory
) -> None:
    (memdir / "MEMORY.md").write_text("- [Tax](project_tax.md) see src/tax.py\n")
    (memdir / "2026-01-02-03-04-shop.md").write_text("---\nproject-name: shop\n---\nsrc/a.py\n")
    Syncer(store).sync_tree(str(memdir))
    assert store.conn.execute("SELECT count(*) FROM citations").fetchone()[0] == 0


def test_the_caution_line_names_two_problems_and_counts_the_rest() -> None:
    verdict: Verdict = {
        "stale": True,
        "checkout": "/src/app",
        "checkout_guessed": False,
        "head": "0" * 40,
        "cited": 4,
        "missing": ["a.py", "b.py"],
        "renamed": {"src/tax.py": "src/taxes.py"},
        "changed_since": [{"path": "c.py", "commits": 1, "newest": "2026-01-02T03:04:05Z"}],
        "all_gone": False,
    }
    assert caution(verdict) == (
        "Caution: cites `a.py`, which no longer exists; cites `b.py`, which no longer exists; "
        "and 2 more."
    )
    only_change: Verdict = {**verdict, "missing": [], "renamed": {}}
    assert caution(only_change) == (
        "Caution: cites `c.py`, changed by 1 commit since this memory was written "
        "(newest 2026-01-02)."
    )
    assert caution({**verdict, "stale": False}) is None
    assert caution(None) is None
