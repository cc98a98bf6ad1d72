"""The cut-off: calibrated on the folder's scores; silent when the best was already shown."""

from __future__ import annotations

from pathlib import Path

from conftest import MakeMemory

from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.select.candidates import Candidate
from memoryd.select.local import LocalRanker
from memoryd.select.selector import Selector
from memoryd.select.tuning import Tuning, cut
from memoryd.select.wiring import select_unrecorded

QUERY = "long celery tasks run twice, is the visibility timeout too short?"
TOPICS_FILE = "project_other_0.md"
TOPICS = ["stripe", "vat", "grafana", "terraform", "android", "kotlin", "ledger", "sentry"]


def mem(filename: str, name: str, description: str, body: str = "") -> Candidate:
    return Candidate(filename, name, description, "project", body, 0.0)


BEST = mem(
    "project_celery_visibility.md",
    "Celery visibility timeout loses long tasks",
    "Long Celery tasks are redelivered twice when the broker visibility timeout is shorter "
    "than the task; raise it to 2 h",
    "visibility timeout redelivery duplicates long tasks",
)
WEAKER = mem(
    "project_celery_concurrency.md",
    "Celery worker concurrency",
    "Celery worker processes per pod, autoscale bounds and why the timeout differs per queue",
)
FOLDER = [BEST, WEAKER] + [
    mem(f"project_other_{i}.md", f"Topic {w}", f"Notes about {w} and the {w} rollout")
    for i, w in enumerate(TOPICS)
]


def test_weaker_match_does_not_stand_in_for_a_surfaced_best_match() -> None:
    ranker = LocalRanker()
    assert [s.filename for s in ranker.ranked(QUERY, FOLDER)[0]] == [BEST.filename]
    # Without the surfaced memory in the comparison the weaker one would pass.
    assert [s.filename for s in ranker.ranked(QUERY, FOLDER[1:])[0]] == [WEAKER.filename]
    assert ranker.ranked(QUERY, FOLDER, shown={BEST.filename})[0] == []


def test_selector_answers_empty_when_the_helpful_memory_was_surfaced(
    memdir: Path, make_memory: MakeMemory, tmp_path: Path
) -> None:
    for c in FOLDER:
        make_memory(c.filename, c.description, name=c.name, type="project", body=c.body or "x")
    store = IndexStore(tmp_path / "index.db")
    try:
        Syncer(store).sync_tree(str(memdir))
        selector = Selector()

        def picked(surfaced: list[str]) -> list[str]:
            params = {"query": QUERY, "dir": str(memdir), "surfaced": surfaced, "ranker": "local"}
            return [
                s["filename"] for s in select_unrecorded(selector, store.conn, params)["selected"]
            ]

        assert picked([]) == [BEST.filename]
        assert picked([BEST.filename]) == []
        assert picked([TOPICS_FILE]) == [BEST.filename]
    finally:
        store.close()


def test_standout_bar_follows_the_folders_score_distribution() -> None:
    tuning = Tuning(standout=2.0)
    alone = {"a.md": 1.2, **{f"z{i}.md": 0.0 for i in range(20)}}
    crowded = {"a.md": 1.2, **{f"m{i}.md": 0.9 + i / 100 for i in range(10)}}
    crowded.update({f"z{i}.md": 0.0 for i in range(10)})
    assert cut(alone, (), tuning) == ["a.md"]
    assert cut(crowded, (), tuning) == []
    # Without the calibration the crowd passes the fixed bars.
    assert len(cut(crowded, (), Tuning(standout=0.0))) == 11


def test_fixed_floors_still_apply() -> None:
    assert cut({"a.md": 0.5}, (), Tuning()) == []
    fixed = Tuning(relative_floor=0.5, standout=0.0)
    assert cut({"a.md": 2.0, "b.md": 0.9}, (), fixed) == ["a.md"]
    assert cut({"a.md": 2.0, "b.md": 1.1}, {"a.md"}, fixed) == ["b.md"]


def test_a_folder_rich_in_whole_answers_is_not_silenced() -> None:
    rich = [
        mem(
            f"project_k8s_{i:02d}.md",
            f"Cluster upgrade step {i}",
            f"Kubernetes cluster upgrade {w}",
        )
        for i, w in enumerate(["drain", "cordon", "addons", "ingress", "etcd", "nodes", "csi"])
    ] + [mem(f"project_other_{i}.md", f"Topic {w}", f"Notes on {w}") for i, w in enumerate(TOPICS)]
    got = LocalRanker().ranked("kubernetes cluster upgrade", rich)[0]
    assert len(got) == 5 and all(s.filename.startswith("project_k8s_") for s in got)
    # Each of them alone would not stand out from the others by the z-score bar.
    assert (
        cut(
            {s.filename: s.score for s in got}, (), Tuning(standout=2.5), [s.score for s in got] * 2
        )
        == []
    )
