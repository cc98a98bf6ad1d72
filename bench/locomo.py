"""A public check nobody here wrote: memory selection on LoCoMo conversations.

LoCoMo (github:snap-research/LoCoMo, CC BY-NC 4.0) holds ten long
conversations, each split into dated sessions with a written summary, and
question/answer items that name the dialogue turns holding their evidence.
This bench turns every conversation into a memory folder, one file per session
(``name``: the session and its date; ``description``: the session summary;
``type: project``; body: the summary, then the transcript), and every QA item
into a ``select`` query whose gold is the set of sessions its evidence comes
from. It reports:

- recall: the per-query share of evidence sessions returned;
- answers per query: how many memories a query gets on average (at most 5);
- cross-conversation silence: the same questions sent to a *different*
  conversation's folder, where nothing can help; the share answered empty.

Targets: recall >= 0.60 with <= 2.5 answers per query; >= 85% silent.

The data is not part of this repository (the licence forbids commercial use).
Fetch it once into the ignored bench/data/ folder:

    git clone --depth 1 https://github.com/snap-research/LoCoMo /tmp/locomo
    cp /tmp/locomo/data/locomo10.json bench/data/

Usage: .venv/bin/python bench/locomo.py [--data FILE] [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from select_quality import shipped_selector

from memoryd import logs

DEFAULT_DATA = Path(__file__).resolve().parent / "data" / "locomo10.json"
TARGETS = {"recall": 0.60, "answers_per_query": 2.5, "cross_empty": 0.85}
_EVIDENCE = re.compile(r"D(\d+):\d+")


def session_file(n: int) -> str:
    return f"project_session_{n:02d}.md"


def write_folder(conversation: dict[str, Any], folder: Path) -> None:
    """One memory file per session that has a summary."""
    folder.mkdir(parents=True)
    talk = conversation["conversation"]
    for key, summary in conversation["session_summary"].items():
        n = int(key.split("_")[1])
        turns = talk.get(f"session_{n}", [])
        when = talk.get(f"session_{n}_date_time", "")
        transcript = "\n".join(f"{t['speaker']}: {t['text']}" for t in turns)
        description = json.dumps(" ".join(summary.split()), ensure_ascii=False)
        (folder / session_file(n)).write_text(
            f"---\nname: {json.dumps(f'Session {n} ({when})')}\ndescription: {description}\n"
            f"type: project\n---\n\n{summary}\n\n{transcript}\n",
            encoding="utf-8",
        )


def queries_of(conversation: dict[str, Any], folder: Path) -> list[dict[str, Any]]:
    """One query per QA item whose evidence names sessions present in the folder."""
    present = {p.name for p in folder.glob("*.md")}
    out = []
    for qa in conversation["qa"]:
        gold = sorted(
            {session_file(int(n)) for ev in qa.get("evidence", []) for n in _EVIDENCE.findall(ev)}
        )
        if gold and set(gold) <= present:
            out.append({"query": qa["question"], "gold": gold, "surfaced": [], "recent_tools": []})
    return out


def evaluate(data: list[dict[str, Any]], workdir: Path) -> dict[str, Any]:
    folders = []
    for i, conversation in enumerate(data):
        folder = workdir / "tree" / f"conv-{i:02d}"
        write_folder(conversation, folder)
        folders.append(folder)
    answer = shipped_selector(workdir / "tree", workdir)
    recall = returned = silent = 0.0
    n = 0
    for i, conversation in enumerate(data):
        other = folders[(i + 1) % len(folders)]
        for q in queries_of(conversation, folders[i]):
            got = answer(q, folders[i])
            recall += len(set(got) & set(q["gold"])) / len(q["gold"])
            returned += len(got)
            silent += not answer(q, other)
            n += 1
    return {
        "queries": n,
        "recall": recall / max(1, n),
        "answers_per_query": returned / max(1, n),
        "cross_empty": silent / max(1, n),
    }


def render(result: dict[str, Any]) -> str:
    lines = [f"{'metric':<20}{'value':>8}{'target':>9}  ok"]
    for key, target in TARGETS.items():
        value = result[key]
        ok = value <= target if key == "answers_per_query" else value >= target
        bound = "<=" if key == "answers_per_query" else ">="
        lines.append(f"{key:<20}{value:>8.3f}{bound:>5}{target:>4.2f}  {'yes' if ok else 'NO'}")
    lines.append(f"{result['queries']} queries over {result['folders']} conversation folders")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"LoCoMo data not found at {args.data}; see this script's docstring", file=sys.stderr)
        return 2
    logs.configure(level="WARNING")
    data = json.loads(args.data.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        result = evaluate(data, Path(tmp))
    result["folders"] = len(data)
    print(json.dumps(result, indent=2) if args.json else render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
