"""Supersession from the signals real folders use, in either file, and where it shows."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import MakeMemory

from memoryd.cli import main
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.report import build_report
from memoryd.select.analysis import analyse
from memoryd.select.candidates import Candidate
from memoryd.select.large import LARGE_DIRECTORY
from memoryd.select.local import LocalRanker
from memoryd.select.manifest import ManifestCache
from memoryd.select.supersession import _claims, _may_signal, stale_banner, superseded_by


def mem(
    filename: str, name: str, description: str, body: str = "", mtime: float = 0.0
) -> Candidate:
    return Candidate(filename, name, description, "project", body, mtime)


BROKER_OLD = mem(
    "project_broker_redis.md",
    "Celery broker is Redis",
    "Celery tasks go through Redis as the message broker, with visibility timeouts",
)
BROKER_NEW = mem(
    "project_broker_rabbit.md",
    "Celery broker on RabbitMQ",
    "Celery tasks go through RabbitMQ; queue layout and routing",
)
OTHER = mem("project_search.md", "Product search", "Search runs on Postgres full-text search")


def with_body(c: Candidate, body: str, description: str | None = None) -> Candidate:
    return Candidate(c.filename, c.name, description or c.description, c.type, body, c.mtime)


@pytest.mark.parametrize(
    ("side", "text"),
    [
        # A banner or note in the old memory.
        ("old", "> **Superseded** by [Celery broker on RabbitMQ](project_broker_rabbit.md)."),
        ("old", "**DEPRECATED**: see project_broker_rabbit.md instead."),
        ("old", "Status: outdated, replaced by the RabbitMQ broker memory."),
        ("old", "Note: this memory is no longer true; moved to project_broker_rabbit.md"),
        ("old", 'Replaced by "Celery broker on RabbitMQ" in March.'),
        # A claim in the new memory.
        ("new", "This replaced the Redis broker setup in March."),
        ("new", "Migrated from [the Redis broker](project_broker_redis.md)."),
        ("new", 'This is the current version of "Celery broker is Redis".'),
        ("new", "Supersedes project_broker_redis.md."),
    ],
)
@pytest.mark.parametrize("analysed", [False, True])
def test_either_memory_can_name_the_other(side: str, text: str, analysed: bool) -> None:
    old, new = BROKER_OLD, BROKER_NEW
    if side == "old":
        old = with_body(old, f"{text}\n\nUse the Redis broker with a 1 h visibility timeout.")
    else:
        new = with_body(new, f"{text}\n\nRouting keys per queue.")
    folder = [old, new, OTHER]
    if analysed:  # as the index hands them over: titles are matched from the stored terms
        folder = [
            replace(c, terms=analyse(c.filename, c.name, c.description, c.body)) for c in folder
        ]
    assert superseded_by(folder) == {"project_broker_redis.md": "project_broker_rabbit.md"}


def test_stale_note_without_a_successor_still_marks_the_memory() -> None:
    old = with_body(BROKER_OLD, "Facts below.\n\nThis entry is kept only as history.")
    assert superseded_by([old, OTHER]) == {"project_broker_redis.md": None}


@pytest.mark.parametrize(
    ("name", "description", "first_line"),
    [
        ("Stale cache gotcha", "Stale caches after a deploy serve old prices", "Flush them."),
        ("API notes", "Deprecated API endpoints and what replaced them", "See the table."),
        ("Redis notes", "Why Redis", "Historical context: we used Redis before 2024."),
        ("Moved to RabbitMQ", "The broker moved in March", "Queues are per team."),
        ("Log storage", "Where logs live", "Archived logs live in S3 for a year."),
    ],
)
def test_status_words_used_as_adjectives_or_news_are_not_banners(
    name: str, description: str, first_line: str
) -> None:
    c = mem("project_x.md", name, description, f"{first_line}\n\nMore.")
    assert stale_banner(c) is None


@pytest.mark.parametrize(
    "body",
    [
        "- Deprecated aliases are removed in 1.0; keep Redis.",
        "The v1 API is deprecated since January, but this broker still serves it.",
        "We moved to weekly releases; the broker setup is unchanged.",
    ],
)
def test_mentioning_a_status_word_does_not_make_a_memory_stale(body: str) -> None:
    old = with_body(BROKER_OLD, f"Redis broker notes.\n\nMore notes.\n\nThird line.\n{body}")
    assert stale_banner(old) is None
    assert superseded_by([old, BROKER_NEW, OTHER]) == {}


def test_current_marker_beats_its_same_subject_sibling() -> None:
    current = mem("project_eks_upgrade_b.md", "EKS upgrade plan (current)", "1.31 steps")
    older = mem("project_eks_upgrade_a.md", "EKS upgrade plan", "1.29 steps")
    assert superseded_by([older, current, OTHER]) == {
        "project_eks_upgrade_a.md": "project_eks_upgrade_b.md"
    }


def test_two_memories_claiming_each_other_the_later_date_wins() -> None:
    a = with_body(BROKER_OLD, "Replaces the RabbitMQ broker memo. Decided 2024-05-01.")
    b = with_body(BROKER_NEW, "Replaces the Redis broker memo. Decided 2025-03-12.")
    assert superseded_by([a, b]) == {"project_broker_redis.md": "project_broker_rabbit.md"}
    assert superseded_by([b, a]) == {"project_broker_redis.md": "project_broker_rabbit.md"}


def test_chains_resolve_to_the_live_end() -> None:
    first = with_body(BROKER_OLD, "Superseded by project_broker_rabbit.md")
    second = with_body(BROKER_NEW, "Superseded by project_broker_sqs.md")
    third = mem("project_broker_sqs.md", "Celery broker on SQS", "Celery on Amazon SQS")
    assert superseded_by([first, second, third]) == {
        "project_broker_redis.md": "project_broker_sqs.md",
        "project_broker_rabbit.md": "project_broker_sqs.md",
    }


def test_stale_memory_is_never_ranked_and_its_successor_inherits() -> None:
    old = with_body(BROKER_OLD, "> Superseded by project_broker_rabbit.md\n\nvisibility timeout")
    got = LocalRanker().ranked(
        "why do celery redis visibility timeouts lose tasks?", [old, BROKER_NEW, OTHER]
    )[0]
    assert [s.filename for s in got] == ["project_broker_rabbit.md"]


def _write_pair(make_memory: MakeMemory) -> None:
    make_memory(
        "project_broker_redis.md",
        "Celery tasks go through Redis as the message broker",
        name="Celery broker is Redis",
        type="project",
        body="> Superseded by [the RabbitMQ memory](project_broker_rabbit.md)\n\nOld facts.\n",
    )
    make_memory(
        "project_broker_rabbit.md",
        "Celery tasks go through RabbitMQ",
        name="Celery broker on RabbitMQ",
        type="project",
    )
    make_memory(
        "project_stale.md", "Old release checklist", type="project", body="This note is obsolete.\n"
    )


def test_list_json_names_the_successor(
    memdir: Path,
    make_memory: MakeMemory,
    db_file: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("MEMORYD_SOCKET", str(tmp_path / "no-daemon.sock"))
    _write_pair(make_memory)
    assert main(["list", str(memdir), "--db", str(db_file), "--json"]) == 0
    files = {f["filename"]: f for f in json.loads(capsys.readouterr().out)["files"]}
    assert files["project_broker_redis.md"]["superseded_by"] == "project_broker_rabbit.md"
    assert files["project_stale.md"]["superseded_by"] is None
    assert "superseded_by" not in files["project_broker_rabbit.md"]


def test_report_lists_superseded_memories(
    memdir: Path, make_memory: MakeMemory, db_file: Path
) -> None:
    _write_pair(make_memory)
    db_file.parent.mkdir(parents=True, exist_ok=True)
    store = IndexStore(db_file)
    try:
        Syncer(store).sync_tree(str(memdir))
        report = build_report(store.conn, [str(memdir)], 30 * 86400, 2e9)
    finally:
        store.close()
    section = next(d for d in report["directories"] if d["path"] == str(memdir))
    assert section["superseded_memories"] == [
        {"file": "project_broker_redis.md", "superseded_by": "project_broker_rabbit.md"},
        {"file": "project_stale.md", "superseded_by": None},
    ]


@pytest.fixture
def large_store(memdir: Path, make_memory: MakeMemory, db_file: Path) -> Iterator[IndexStore]:
    """An index of a folder over the large-folder size holding the broker pair."""
    for i in range(LARGE_DIRECTORY + 5):
        make_memory(f"project_filler_{i}.md", f"unrelated filler note number {i}", type="project")
    _write_pair(make_memory)
    db_file.parent.mkdir(parents=True, exist_ok=True)
    store = IndexStore(db_file)
    try:
        yield store
    finally:
        store.close()


def test_large_folder_finds_a_banner_in_the_old_memory(
    memdir: Path, large_store: IndexStore
) -> None:
    Syncer(large_store).sync_tree(str(memdir))
    manifest = ManifestCache().get(large_store.conn, str(memdir))
    assert manifest.large and manifest.relations is not None
    assert manifest.relations.superseded == {
        "project_broker_redis.md": "project_broker_rabbit.md",
        "project_stale.md": None,
    }


def test_large_folder_redoes_what_an_edited_memory_says_and_keeps_the_rest(
    memdir: Path, make_memory: MakeMemory, large_store: IndexStore
) -> None:
    cache = ManifestCache()

    def superseded() -> dict[str, str | None]:
        Syncer(large_store).sync_tree(str(memdir))
        manifest = cache.get(large_store.conn, str(memdir))
        assert manifest.relations is not None
        return manifest.relations.superseded

    assert superseded() == {
        "project_broker_redis.md": "project_broker_rabbit.md",
        "project_stale.md": None,
    }
    first = cache.get(large_store.conn, str(memdir)).heads
    # The stale note drops its banner; a filler gains one naming its successor.
    make_memory("project_stale.md", "Old release checklist", type="project", body="Current.\n")
    make_memory(
        "project_filler_3.md",
        "unrelated filler note number 3",
        type="project",
        body="Replaced by project_filler_4.md\n",
    )
    assert superseded() == {
        "project_broker_redis.md": "project_broker_rabbit.md",
        "project_filler_3.md": "project_filler_4.md",
    }
    # What the unchanged old memory says was kept, not worked out again.
    now = cache.get(large_store.conn, str(memdir)).heads
    assert now["project_broker_redis.md"][2] is first["project_broker_redis.md"][2]
    assert now["project_stale.md"][2] is not first["project_stale.md"][2]
    (memdir / "project_broker_redis.md").unlink()
    assert superseded() == {"project_filler_3.md": "project_filler_4.md"}


STATEMENTS = [
    *(f"> **{w}**: see project_broker_rabbit.md" for w in ("Superseded", "DEPRECATED")),
    *(f"Status: {w}." for w in ("Outdated", "out-of-date", "Out of date", "obsolete", "STALE")),
    *(f"Note: {w}." for w in ("archived", "Historical")),
    "This note is No Longer accurate.",
    "Replaced with project_broker_rabbit.md",
    "Moved into project_broker_rabbit.md",
    "Kept only as history.",
    *(f"This {v} project_broker_redis.md." for v in ("supersedes", "Replaces", "obsoletes")),
    "Migrated From project_broker_redis.md.",
    'This is the latest version of "Celery broker is Redis".',
]


@pytest.mark.parametrize("text", STATEMENTS)
def test_the_cheap_screen_never_hides_a_statement(text: str) -> None:
    # Files whose text holds none of the trigger words skip the patterns: every
    # statement the patterns match must carry one, whatever its case.
    for c in (with_body(BROKER_OLD, text), with_body(BROKER_NEW, "", description=text)):
        assert stale_banner(c) is not None or _claims(c)
        assert _may_signal(c)


def test_memories_without_trigger_words_are_screened_out_unless_not_ascii() -> None:
    assert not _may_signal(OTHER)
    # Case-insensitive matching of non-ASCII text is not plain lower-casing: no screen.
    assert _may_signal(with_body(OTHER, "Ünïcode notes"))
