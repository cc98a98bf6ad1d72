"""The selection corpora the quality bench scores: where the folders are, the queries, the labels.

Two kinds exist. The development corpus (``../shared/bench/coding-memories``)
keeps everything in one directory: ``projects/<name>/``, ``queries.jsonl``,
``annotations.json`` and ``secrets_files.txt``. The real folders keep their
labels in the repository (``bench/real/queries.jsonl`` and
``annotations.json``, written here) and their memory files outside it, in the
ignored ``bench/data/real/projects/`` that ``bench/real_folders.py build``
fills from the repositories' own history.

A query set can be scored alone, or several at once: their projects then form
one pool for leave-one-project-out, which is what ``union`` checks (no two
corpora may name the same project).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
DEV_CORPUS = BENCH.parents[1] / "shared" / "bench" / "coding-memories"
REAL_LABELS = BENCH / "real"
REAL_DATA = BENCH / "data" / "real"


@dataclass(frozen=True)
class Corpus:
    """One corpus: its name, the directory holding its project folders, and its labels."""

    name: str
    projects: Path
    queries: list[dict[str, Any]] = field(repr=False)
    annotations: dict[str, dict[str, Any]] = field(repr=False)
    secrets: frozenset[str] = frozenset()
    """``<project>/<filename>`` of files holding (fake) credentials: never gold, never offered."""

    def folder(self, project: str) -> Path:
        return self.projects / project

    @property
    def project_names(self) -> list[str]:
        return sorted({q["project"] for q in self.queries})


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def dev_corpus(root: Path = DEV_CORPUS) -> Corpus:
    """The development corpus laid out as one directory."""
    secrets = frozenset(
        line.split("\t")[0].removeprefix("projects/")
        for line in (root / "secrets_files.txt").read_text(encoding="utf-8").splitlines()
        if line and not line.startswith("#")
    )
    return Corpus(
        name="dev",
        projects=root / "projects",
        queries=read_jsonl(root / "queries.jsonl"),
        annotations=json.loads((root / "annotations.json").read_text(encoding="utf-8")),
        secrets=secrets,
    )


def real_corpus(data: Path = REAL_DATA, labels: Path = REAL_LABELS) -> Corpus:
    """The real folders: files rebuilt under ``data/projects``, labels from ``labels``."""
    return Corpus(
        name="real",
        projects=data / "projects",
        queries=read_jsonl(labels / "queries.jsonl"),
        annotations=json.loads((labels / "annotations.json").read_text(encoding="utf-8")),
    )


def missing_folders(corpus: Corpus) -> list[str]:
    """Projects the queries name whose folder is absent (the real ones before a build)."""
    return [p for p in corpus.project_names if not corpus.folder(p).is_dir()]


def union(corpora: Sequence[Corpus]) -> dict[str, Corpus]:
    """Project name -> the corpus it belongs to, over all of them (names must not clash)."""
    owner: dict[str, Corpus] = {}
    for corpus in corpora:
        for project in corpus.project_names:
            if project in owner:
                raise ValueError(
                    f"project {project!r} is in both {owner[project].name} and {corpus.name}"
                )
            owner[project] = corpus
    return owner
