"""Synthetic memory folders for benchmarks: realistic headers and bodies, many dirs."""

from __future__ import annotations

import random
from pathlib import Path

TYPES = ("user", "feedback", "project", "reference")
WORDS = [
    "deploy",
    "migration",
    "pytest",
    "docker",
    "cache",
    "latency",
    "retry",
    "queue",
    "worker",
    "schema",
    "index",
    "release",
    "rollback",
    "flaky",
    "timeout",
    "celery",
    "postgres",
    "terraform",
    "gradle",
    "lint",
    "config",
    "secret",
    "token",
    "webhook",
    "billing",
    "invoice",
    "search",
    "logging",
    "metrics",
    "alert",
    "dashboard",
    "compose",
    "kotlin",
    "react",
    "vite",
    "airflow",
    "dbt",
    "backfill",
    "partition",
    "replica",
    "failover",
]


def make_tree(root: Path, count: int, per_dir: int = 200, seed: int = 7) -> list[Path]:
    """Write ``count`` memory files under ``root`` in folders of ``per_dir``."""
    rng = random.Random(seed)
    files = []
    for i in range(count):
        folder = root / f"project-{i // per_dir:04d}" / "memory"
        if i % per_dir == 0:
            folder.mkdir(parents=True, exist_ok=True)
        mtype = TYPES[i % 4]
        topic = "_".join(rng.sample(WORDS, 3))
        desc = " ".join(rng.sample(WORDS, 14))
        body = "\n\n".join(" ".join(rng.choices(WORDS, k=40)) for _ in range(4))
        path = folder / f"{mtype}_{topic}_{i}.md"
        path.write_text(
            f"---\nname: {topic.replace('_', ' ')}\ndescription: {desc}\ntype: {mtype}\n---\n\n"
            f"{body}\n\n**Why:** {desc}\n",
            encoding="utf-8",
        )
        files.append(path)
    return files
