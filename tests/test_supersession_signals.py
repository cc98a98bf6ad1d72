"""General staleness signals: markers, dated siblings, ended validity, retired subjects.

Each case is a wording any team uses; each negative is a memory that merely
talks about old things, dates or deprecations and must stay live.
"""

from __future__ import annotations

import dataclasses
import random

import pytest

from memoryd.select import dated
from memoryd.select.analysis import analyse
from memoryd.select.candidates import Candidate
from memoryd.select.dated import dates_in, own_date, valid_until
from memoryd.select.supersession import superseded_by


def mem(fn: str, name: str, desc: str, body: str = "", type_: str = "project") -> Candidate:
    return Candidate(fn, name, desc, type_, body, 0.0)


RELEASE = mem("project_release_train.md", "Release train", "Weekly mobile release on Thursdays")

STALE_CASES = {
    "an (old) marker, no sibling": (
        [
            mem("project_deploy_a.md", "Deploy process (old)", "Deploys went through Jenkins"),
            RELEASE,
        ],
        {"project_deploy_a.md": None},
    ),
    "an (old) marker and its sibling": (
        [
            mem("project_deploy_old.md", "Deploy process (old)", "Deploys went through Jenkins"),
            mem("project_deploy.md", "Deploy process", "Deploys go through Argo CD"),
        ],
        {"project_deploy_old.md": "project_deploy.md"},
    ),
    "an _old filename": (
        [
            mem("project_deploy_process_old.md", "Deploy process", "Deploys went via Jenkins"),
            mem("project_deploy_process.md", "Deploy process", "Deploys go via Argo CD"),
        ],
        {"project_deploy_process_old.md": "project_deploy_process.md"},
    ),
    "a newer sibling by the dates in the titles": (
        [
            mem("project_plan_2025_03.md", "Release plan (2025-03)", "Scope of the March release"),
            mem("project_plan_2025_05.md", "Release plan (2025-05)", "Scope of the May release"),
        ],
        {"project_plan_2025_03.md": "project_plan_2025_05.md"},
    ),
    "a newer sibling by the dates in titles of another script": (
        [
            mem("project_plan_a.md", "发布计划 (2025-03)", "三月的发布范围"),
            mem("project_plan_b.md", "发布计划 (2025-05)", "五月的发布范围"),
        ],
        {"project_plan_a.md": "project_plan_b.md"},
    ),
    "a newer sibling by the dates in accented titles": (
        [
            mem("project_plan_a.md", "Plan de lanzamiento — versión (2025-03)", "Marzo"),
            mem("project_plan_b.md", "Plan de lanzamiento — versión (2025-05)", "Mayo"),
        ],
        {"project_plan_a.md": "project_plan_b.md"},
    ),
    "date ranges that ended, in the titles": (
        [
            mem("project_oncall_a.md", "On-call rotation 2025-01-01 to 2025-03-31", "Who is on"),
            mem("project_oncall_b.md", "On-call rotation 2025-04-01 to 2025-06-30", "Who is on"),
        ],
        {"project_oncall_a.md": "project_oncall_b.md"},
    ),
    "a newer sibling by the dates its body opens with": (
        [
            mem("project_pricing_a.md", "Pricing rules", "How prices work", "Updated 2025-01-10."),
            mem("project_pricing_b.md", "Pricing rules", "How prices work", "Updated 2025-06-02."),
        ],
        {"project_pricing_a.md": "project_pricing_b.md"},
    ),
    "a validity that ended before the folder's latest date": (
        [
            mem("project_freeze.md", "Code freeze", "No deploys; valid until 2025-03-01"),
            mem("project_sprint.md", "Sprint notes", "Sprint planning of 2025-05-10"),
        ],
        {"project_freeze.md": None},
    ),
    "a subject another memory marks (superseded)": (
        [
            mem("project_mcagent.md", ".mcagent architecture", "Agent state in .mcagent/"),
            mem("feedback_mcagent_scope.md", ".mcagent scope", "Scope paths", type_="feedback"),
            mem(
                "project_loom.md",
                "Loom layout",
                "State lives under `.loom/`, not `.mcagent/` (superseded)",
            ),
        ],
        {"project_mcagent.md": "project_loom.md", "feedback_mcagent_scope.md": "project_loom.md"},
    ),
}


@pytest.mark.parametrize("case", sorted(STALE_CASES))
def test_general_signals_make_a_memory_stale(case: str) -> None:
    folder, expected = STALE_CASES[case]
    assert superseded_by(folder) == expected
    assert superseded_by(indexed(folder)) == expected


def indexed(folder: list[Candidate]) -> list[Candidate]:
    """``folder`` as the index serves it: each memory with its stored analysis."""
    return [
        dataclasses.replace(c, terms=analyse(c.filename, c.name, c.description, c.body))
        for c in folder
    ]


LIVE_CASES = {
    "a memory about deprecated endpoints": [
        mem("feedback_api.md", "Deprecated API endpoints", "Which /v1 endpoints go away when"),
        RELEASE,
    ],
    "a postmortem with a date range": [
        mem("project_outage.md", "Checkout outage 2025-03-02 to 2025-03-04", "What broke"),
        mem("project_plan.md", "Release plan", "The 2025-06-01 release"),
    ],
    "two dated memories on different parts of one project": [
        mem("project_wp9_tej_20260504.md", "WP9 TEJ baseline", "2026-05-04 rerun"),
        mem("project_wp9_horizon_20260505.md", "WP9 horizon aligned experiment", "2026-05-05"),
    ],
    "a (stale) that labels something else mid-sentence": [
        mem(
            "project_deploy.md",
            "How to deploy the mirror",
            "Both differ from the repo's (stale) docs",
        ),
        RELEASE,
    ],
    "'goes through' is no validity": [
        mem(
            "feedback_apply.md",
            "Never apply locally",
            "All applies go through Atlantis",
            "2024-09-30",
        ),
        mem("project_sprint.md", "Sprint notes", "Sprint planning of 2025-05-10"),
    ],
    "a weekly series, each true of its week": [
        mem(f"project_sync_{d}.md", f"Weekly sync 2025-03-{d}", "Decisions of the week")
        for d in ("03", "10", "17", "24")
    ],
    "a superseded subject that names the marking memory itself": [
        mem("project_loom.md", "Loom layout", "Not `loom/` v1 (superseded) but loom v2"),
        mem("project_loom_tools.md", "Loom tools", "The CLI"),
    ],
}


@pytest.mark.parametrize("case", sorted(LIVE_CASES))
def test_memories_that_only_mention_old_things_stay_live(case: str) -> None:
    assert superseded_by(LIVE_CASES[case]) == {}
    assert superseded_by(indexed(LIVE_CASES[case])) == {}


def test_dates_in_the_forms_teams_write() -> None:
    assert dates_in("2025-03-04, 2025/03/05, 20250306 and 2025_03") == [
        (2025, 3, 4),
        (2025, 3, 5),
        (2025, 3, 6),
        (2025, 3, 31),
    ]
    assert dates_in("2025年3月4日 and Q2 2025 and 2025-Q3") == [
        (2025, 3, 4),
        (2025, 6, 31),
        (2025, 9, 31),
    ]
    assert dates_in("March 3, 2025 or 4 Apr 2025 or June 2025") == [
        (2025, 3, 3),
        (2025, 4, 4),
        (2025, 6, 30),
    ]
    assert dates_in("PR #20251 and v2.0.2025") == []


def test_own_date_prefers_the_header_then_the_title_then_the_body() -> None:
    c = Candidate(
        "project_x_2025_01.md",
        "X",
        "x",
        "project",
        "2025-09-09",
        0.0,
        header={"updated": "2025-05-01"},
    )
    assert own_date(c) == (2025, 5, 1)
    assert own_date(mem("project_x_2025_01.md", "X", "x", "2025-09-09")) == (2025, 1, 31)
    assert own_date(mem("project_x.md", "X", "x", "seen 2025-09-09")) == (2025, 9, 9)
    assert own_date(mem("project_x.md", "X", "x")) is None


def test_valid_until_reads_header_fields_and_stated_ends() -> None:
    header = {"valid_until": "2025-04-30"}
    assert valid_until(Candidate("a.md", "A", "a", "project", "", 0.0, header=header)) == (
        2025,
        4,
        30,
    )
    assert valid_until(mem("a.md", "Proxy", "Temporary proxy, expires: 3 May 2025")) == (2025, 5, 3)
    assert valid_until(mem("a.md", "Proxy", "Goes through the proxy since 2025-05-03")) is None


@pytest.mark.parametrize(
    ("desc", "end"),
    [
        ("VALID UNTIL 2025-03-01", (2025, 3, 1)),
        ("Freeze Ends On 2025-03-01", (2025, 3, 1)),
        ("Proxy — good thru March 2025", (2025, 3, 31)),
        ("Kühlung: Expired 2025-03-01", (2025, 3, 1)),
        ("valid until further notice", None),
        ("valid until Q3", None),
    ],
)
def test_a_stated_end_is_read_in_any_case_and_script(desc: str, end: tuple[int, ...]) -> None:
    assert valid_until(mem("a.md", "Freeze", desc)) == end


def test_header_fields_say_a_memory_is_stale_or_replaces_another() -> None:
    old = Candidate("project_a.md", "Broker", "Redis broker", "project", "", 0.0)
    new = Candidate("project_b.md", "Broker v2", "RabbitMQ broker", "project", "", 0.0)
    by_status = Candidate(
        "project_c.md", "Proxy", "The proxy", "project", "", 0.0, header={"status": "deprecated"}
    )
    live = Candidate(
        "project_d.md", "Plan", "The plan", "project", "", 0.0, header={"status": "in progress"}
    )
    named = [dataclasses.replace(old, header={"superseded_by": "project_b.md"}), new]
    assert superseded_by(named) == {"project_a.md": "project_b.md"}
    claimed = [old, dataclasses.replace(new, header={"supersedes": ["project_a.md"]})]
    assert superseded_by(claimed) == {"project_a.md": "project_b.md"}
    assert superseded_by([by_status, live]) == {"project_c.md": None}


@pytest.mark.parametrize("seed", range(5))
def test_newer_siblings_are_those_of_comparing_every_shared_word(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Looking up only each title's rarest words finds every same-titled pair."""
    rng = random.Random(seed)
    words = ["deploy", "plan", "release", "oncall", "pricing", "billing", "rotation", "notes"]
    folder = [
        mem(
            f"project_{n}.md",
            " ".join(rng.sample(words, rng.randint(1, 4))) + f" (2025-{rng.randint(1, 12):02d})",
            "what it says",
            type_=rng.choice(["project", "feedback"]),
        )
        for n in range(60)
    ]
    fast = dated.newer_sibling_edges(folder)
    monkeypatch.setattr(dated, "_rarest", lambda kind, words, held: sorted(words))
    assert fast == dated.newer_sibling_edges(folder)
    assert fast  # the folder does hold same-titled versions
