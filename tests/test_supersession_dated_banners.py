"""Stale banners that give a date, and dated pairs where one memory says which is replaced.

A banner such as "> Superseded (2025-04): see [new](new.md)" marks its own
memory stale whatever form the date takes. When memories carry dates, the one
a memory's words say was replaced is the stale one, even when its dates are
the later ones. Each negative is a memory that merely talks about something
superseded and must stay live.
"""

from __future__ import annotations

import pytest

from memoryd.select.candidates import Candidate
from memoryd.select.supersession import stale_banner, superseded_by


def mem(fn: str, name: str, desc: str, body: str = "", mtime: float = 0.0) -> Candidate:
    return Candidate(fn, name, desc, "project", body, mtime)


NEW = mem("project_queue_rabbitmq.md", "Queue on RabbitMQ", "Jobs go through RabbitMQ")


def old_with(banner: str) -> Candidate:
    return mem(
        "project_queue_redis.md",
        "Queue on Redis",
        "Jobs went through a Redis list",
        f"{banner}\n\nWorkers polled the list every second.",
    )


BANNERS = [
    "> Superseded (2025-04): see [RabbitMQ](project_queue_rabbitmq.md)",
    "> Replaced (2024-11) by [RabbitMQ](project_queue_rabbitmq.md)",
    "> Superseded (2025-04-12) by project_queue_rabbitmq.md",
    "> Superseded [2025-04]: use project_queue_rabbitmq.md",
    "> Superseded — 2025-04 — see project_queue_rabbitmq.md",
    "> Replaced (2024-11) — by [RabbitMQ](project_queue_rabbitmq.md)",
    "> Replaced — 2024-11 — by [RabbitMQ](project_queue_rabbitmq.md)",
    "> **Superseded (2025-04)**: see project_queue_rabbitmq.md",
    "**Deprecated [2025-04-12]:** see project_queue_rabbitmq.md",
    "> Superseded (Apr 2025) by project_queue_rabbitmq.md",
    "> Superseded (on 12 May 2025) by project_queue_rabbitmq.md",
    "> Superseded 2025-04 by project_queue_rabbitmq.md",
    "> Replaced on 2024-11-03 by project_queue_rabbitmq.md",
    "> [!WARNING] Superseded (2025-04) by [RabbitMQ](project_queue_rabbitmq.md)",
    "> Outdated (2025/04): see [RabbitMQ](project_queue_rabbitmq.md)",
]


@pytest.mark.parametrize("banner", BANNERS)
def test_a_dated_banner_marks_its_memory_stale_with_the_named_successor(banner: str) -> None:
    old = old_with(banner)
    assert stale_banner(old) is not None
    assert superseded_by([old, NEW]) == {old.filename: NEW.filename}


def test_a_dated_mark_closing_the_name_marks_the_memory() -> None:
    old = mem("project_queue_redis.md", "Queue on Redis (superseded 2025-04)", "Jobs on Redis")
    assert superseded_by([old, NEW]) == {old.filename: None}


PROSE = [
    "The `fetch` API was superseded (2023) by `request`; call `request` instead.",
    "Use requests.Session; urllib2 is superseded (2019-01) by it.",
    "- Superseded (2025-04): the v1 endpoints, which the SDK still wraps.",
    "Deprecated 2025-04 endpoints still answer but log a warning.",
    "Stale since 2025-04 cache entries are evicted at startup.",
]


@pytest.mark.parametrize("line", PROSE)
def test_prose_about_a_superseded_api_leaves_the_memory_live(line: str) -> None:
    lib = mem(
        "reference_http_client.md",
        "HTTP client usage",
        "How we call the HTTP client",
        f"Notes on the client.\n\nWe wrap it in one module.\n\nAlso used by jobs.\n\n{line}",
    )
    assert stale_banner(lib) is None
    assert superseded_by([lib, NEW]) == {}


def test_a_dated_replaced_by_banner_is_not_read_as_replacing_the_successor() -> None:
    """ "Replaced (2024-11) by X" says this memory was replaced, never that it replaced X."""
    old = old_with("Replaced (2024-11) by project_queue_rabbitmq.md.")
    assert superseded_by([old, NEW]) == {old.filename: NEW.filename}


# Two versions of one memory, same title, each with its own date: by dates alone
# the later is current, but the words say otherwise.
PLAN_OLD = "project_release_plan.md"
PLAN_NEW = "project_release_plan_v2.md"


def plan(fn: str, body: str) -> Candidate:
    return mem(fn, "Release plan", "Scope and dates of the next release", body)


@pytest.mark.parametrize(
    ("old_body", "new_body"),
    [
        (  # the old one's banner carries the latest date
            f"> Superseded (2025-06-30) by {PLAN_NEW}\n\nScope frozen 2025-03-01.",
            "Scope agreed 2025-05-02: payments and search.",
        ),
        (  # the new one says so, and the old one mentions a later date
            "Scope frozen 2025-03-01; ship planned for 2025-09-15.",
            f"Replaces {PLAN_OLD} (scope agreed 2025-05-02).",
        ),
        (  # the old one's banner names no successor and carries the latest date
            "> Superseded (2025-06-30).\n\nScope frozen 2025-03-01.",
            "Scope agreed 2025-05-02: payments and search.",
        ),
        (  # both say so, the old one dated later
            f"> Replaced [2025-07-01] by {PLAN_NEW}\n\nScope frozen 2025-03-01.",
            f"This replaces {PLAN_OLD}. Scope agreed 2025-05-02.",
        ),
    ],
)
def test_the_replaced_memory_is_stale_whatever_its_dates(old_body: str, new_body: str) -> None:
    old, new = plan(PLAN_OLD, old_body), plan(PLAN_NEW, new_body)
    for folder in ([old, new], [new, old]):
        stale = superseded_by(folder)
        assert PLAN_NEW not in stale
        assert PLAN_OLD in stale


def test_dates_still_decide_between_versions_when_no_memory_says_which() -> None:
    old = plan(PLAN_OLD, "Scope agreed 2025-05-02.")
    new = plan(PLAN_NEW, "Scope agreed 2025-08-20.")
    assert superseded_by([old, new]) == {PLAN_OLD: PLAN_NEW}


def test_dates_still_break_a_tie_between_two_memories_claiming_each_other() -> None:
    a = plan(PLAN_OLD, f"Replaces {PLAN_NEW}. Written 2025-03-01.")
    b = plan(PLAN_NEW, f"Replaces {PLAN_OLD}. Written 2025-06-01.")
    assert superseded_by([a, b]) == {PLAN_OLD: PLAN_NEW}
    assert superseded_by([b, a]) == {PLAN_OLD: PLAN_NEW}
