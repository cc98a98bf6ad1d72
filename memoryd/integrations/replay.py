"""``memoryd eval``: how ``select`` does on the prompts of the user's own Claude sessions.

A prompt's labels are the folder's memories the agent ``Read`` or Claude Code's recall attached
in its turn, less those seen before; ``select`` runs as the hook would have, per ranker, against
a temporary index of each folder (the daemon's index and telemetry are untouched), and precision
and recall are summed over the labelled prompts.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memoryd.claude_folders import memory_folder, project_dir
from memoryd.config import Config
from memoryd.errors import InvalidParams
from memoryd.indexer.queries import memories_in
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.integrations._hook_state import in_directory
from memoryd.integrations._transcript import Turn, first_cwd, turns
from memoryd.integrations.claude_code import MAX_QUERY_CHARS
from memoryd.replies import SelectResult
from memoryd.select.selector import Selector
from memoryd.select.wiring import judge_factories, select_unrecorded

NO_JUDGE = {
    "anthropic": "--ranker anthropic needs an Anthropic API key and none is configured "
    "(anthropic.api_key in config.yaml, or ANTHROPIC_API_KEY)",
    "openai": "--ranker openai needs an OpenAI-compatible server and none is configured "
    "(openai.base_url and openai.model in config.yaml)",
}
SENT_TO = {"anthropic": "Anthropic's API", "openai": "the configured OpenAI-compatible server"}
BIAS = (
    "The labels are implicit and lean one way: they are the memories the agent opened "
    "itself (or Claude Code's recall attached) in the same turn. A memory that helped "
    "without being opened is not a label, and one memoryd already injected is rarely "
    "read again, so memoryd's own past help shows up as misses, not hits. Read the "
    "figures as a lower bound, and to compare rankers with each other."
)


@dataclass
class Tally:
    """One ranker's sums over a folder's labelled prompts."""

    picked: int = 0
    hits: int = 0
    labels: int = 0
    fallbacks: int = 0

    def add(self, result: SelectResult, labels: set[str]) -> None:
        picked = {s["filename"] for s in result["selected"]}
        self.picked += len(picked)
        self.hits += len(picked & labels)
        self.labels += len(labels)
        self.fallbacks += 1 if result["fallback"] else 0

    # dict[str, Any]: JSON for `memoryd eval --json` (counts and ratios, None when undefined).
    def figures(self) -> dict[str, Any]:
        precision = self.hits / self.picked if self.picked else None
        recall = self.hits / self.labels if self.labels else None
        f1 = (
            2 * precision * recall / (precision + recall)
            if precision and recall
            else (0.0 if precision is not None and recall is not None else None)
        )
        return {
            "precision": _round(precision),
            "recall": _round(recall),
            "f1": _round(f1),
            "picked": self.picked,
            "hits": self.hits,
            "fallbacks": self.fallbacks,
        }


@dataclass
class Project:
    """A memory folder and the transcripts of its sessions."""

    directory: str
    transcripts: list[Path] = field(default_factory=list)
    prompts: int = 0
    labelled: int = 0
    labels: int = 0


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def group(
    transcripts: Sequence[Path], directory: str | None = None
) -> tuple[dict[str, Project], list[str]]:
    """The transcripts by memory folder (``directory`` for all, if given), and notes."""
    # A session's own $CLAUDE_PROJECT_DIR must not stand for every transcript's start.
    env = {k: v for k, v in os.environ.items() if k != "CLAUDE_PROJECT_DIR"}
    found: dict[str, Project] = {}
    notes: list[str] = []
    for path in transcripts:
        folder = directory
        if folder is None:
            cwd = first_cwd(path)
            if cwd is None:
                notes.append(f"{path}: no prompt with a working directory; skipped")
                continue
            folder = str(memory_folder(project_dir(cwd, str(path), env), env).directory)
        real = os.path.realpath(folder)
        found.setdefault(real, Project(real)).transcripts.append(path)
    return found, notes


def labels_of(turn: Turn, directory: str, memories: set[str]) -> tuple[set[str], list[str]]:
    """A turn's labels (names among ``memories``) and the names it had seen before its prompt."""
    seen = in_directory(turn.before.files, directory)
    opened = in_directory(turn.read + turn.recalled, directory)
    return (set(opened) & memories) - set(seen), sorted(set(seen))


# dict[str, Any]: the report is JSON for `memoryd eval --json`, read back by render().
def evaluate(
    transcripts: Sequence[Path],
    cfg: Config,
    rankers: Sequence[str] = ("local",),
    *,
    directory: str | None = None,
) -> dict[str, Any]:
    """The figures per project and ranker, as ``memoryd eval --json`` prints them."""
    judges = judge_factories(cfg)
    for name in rankers:
        if name != "local" and name not in judges:
            raise InvalidParams(
                f"{NO_JUDGE[name]}; the local ranker needs none", {"field": "ranker"}
            )
    notes = [
        f"a judge is configured: --ranker {name} scores it too "
        f"(it sends each labelled prompt to {SENT_TO[name]})"
        for name in judges
        if name not in rankers
    ]
    projects, skipped = group(transcripts, directory)
    notes += skipped
    selector = Selector(judges=judges, shortlist=cfg.shortlist)
    out = []
    for project in projects.values():
        if not os.path.isdir(project.directory):
            notes.append(f"{project.directory}: no memory folder; its sessions were skipped")
            continue
        tallies = _replay(project, selector, rankers)
        out.append(
            {
                "dir": project.directory,
                "transcripts": len(project.transcripts),
                "prompts": project.prompts,
                "labelled_prompts": project.labelled,
                "labels": project.labels,
                "rankers": {name: t.figures() for name, t in tallies.items()},
            }
        )
    if not transcripts:
        notes.append("no transcripts found")
    asked = [name for name in rankers if name != "local"]
    return {"projects": out, "bias": BIAS, "notes": notes, "sent": bool(asked), "judges": asked}


def _replay(project: Project, selector: Selector, rankers: Sequence[str]) -> dict[str, Tally]:
    tallies = {name: Tally() for name in rankers}
    with tempfile.TemporaryDirectory(prefix="memoryd-eval-") as tmp:
        store = IndexStore(Path(tmp) / "index.db")
        try:
            Syncer(store).sync_tree(project.directory)
            # What select may return: parsed memories (not MEMORY.md, not session files).
            found = memories_in(store.conn, project.directory)
            memories = {f.filename for f in found if f.filename != "MEMORY.md"}
            for path in project.transcripts:
                for turn in turns(path):
                    project.prompts += 1
                    labels, seen = labels_of(turn, project.directory, memories)
                    if labels:
                        project.labelled += 1
                        project.labels += len(labels)
                        for ranker, tally in tallies.items():
                            ask = _ask(turn, project.directory, seen, ranker)
                            tally.add(select_unrecorded(selector, store.conn, ask), labels)
        finally:
            store.close()
    return tallies


def _ask(turn: Turn, directory: str, seen: list[str], ranker: str) -> dict[str, object]:
    """The ``select`` the hook would have sent for ``turn``'s prompt (with ``ranker``)."""
    return {
        "query": turn.prompt[:MAX_QUERY_CHARS],
        "dir": directory,
        "surfaced": seen,
        "recent_tools": turn.before.tools,
        "ranker": ranker,
    }


def render(report: Mapping[str, Any]) -> str:
    """The figures as a table per project, the bias note, and any notes."""
    lines = []
    for p in report["projects"]:
        lines.append(
            f"{p['dir']}: {p['prompts']} prompts in {p['transcripts']} sessions, "
            f"{p['labelled_prompts']} labelled ({p['labels']} labels)"
        )
        lines.append(_row("ranker", "precision", "recall", "F1", "picked", "hits"))
        for name, f in p["rankers"].items():
            cells = [_cell(f[k]) for k in ("precision", "recall", "f1")]
            lines.append(_row(name, *cells, str(f["picked"]), str(f["hits"])))
    if not report["projects"]:
        lines.append("no project with a memory folder and a transcript to replay")
    lines += ["", report["bias"], *report["notes"]]
    asked = report["judges"]
    sent = (
        f"prompts were sent to {', '.join(SENT_TO[n] for n in asked)} (ranker {', '.join(asked)})"
        if report["sent"]
        else "nothing was sent anywhere"
    )
    lines.append(f"({sent}; the daemon's index and telemetry were not touched)")
    return "\n".join(lines)


def _row(*cells: str) -> str:
    return "  " + "  ".join(c.ljust(10) if i == 0 else c.rjust(9) for i, c in enumerate(cells))


def _cell(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"
