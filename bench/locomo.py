"""A public check nobody here wrote: memory selection on LoCoMo conversations.

LoCoMo (github:snap-research/LoCoMo, CC BY-NC 4.0) holds ten long
conversations, each split into dated sessions, with a written summary of each
session, and question/answer items that name the dialogue turns holding their
evidence. This bench turns every conversation into a memory folder, one file
per session that has a summary, and every QA item into a ``select`` query
whose gold is the set of sessions its evidence comes from. Two variants:

- ``header`` (the default): what an agent's own session memory looks like.
  ``description`` is a one-line condensation of the session summary (its
  sentences in order while they fit 200 characters; a longer first sentence
  is cut at a word), the body is the summary, and there is no transcript.
- ``transcript``: ``description`` is the whole summary and the body is the
  summary followed by the transcript.

It reports:

- recall: the per-query share of evidence sessions returned;
- answers per query: how many memories a query gets on average (at most 5);
- cross-conversation silence: the same questions sent to a *different*
  conversation's folder, where nothing can help; the share answered empty.

Targets: recall >= 0.60 with <= 2.5 answers per query; >= 85% silent.

The data is not part of this repository (the licence forbids commercial use).
It is read from, in this order: ``--data FILE`` (``locomo10.json``, or the
``locomo10.zip`` the repository once shipped); ``bench/data/locomo10.json``; a
local git copy of the repository (``--mirror DIR``, default the ``fetch``
tool's mirror under /work/.mirror), from which ``data/locomo10.json`` or
``data/locomo10.zip`` is taken at the newest commit that has one. To make a
copy by hand:

    git clone --depth 1 https://github.com/snap-research/LoCoMo /tmp/locomo
    .venv/bin/python bench/locomo.py --mirror /tmp/locomo

Two layouts exist. The current ``locomo10.json`` nests the sessions under
``conversation`` and has a ``session_summary`` per session; the older zip holds
one file per conversation with the sessions at the top level and, in place of
summaries, ``events_session_<n>``: the events of each speaker in that
session, which serve as its summary here.

Usage: .venv/bin/python bench/locomo.py [--variant header|transcript] [--data FILE]
       [--mirror DIR] [--json]
"""

from __future__ import annotations

import argparse
import io
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from select_quality import shipped_selector

from memoryd import logs

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE / "data" / "locomo10.json"
MIRRORS = (
    Path("/work/.mirror/snap-research+LoCoMo/repo"),
    Path("/work/.mirror/snap-research+locomo/repo"),
)
"""Where ``fetch`` puts the repository (both spellings exist there; the first has the json)."""
DATA_PATHS = ("data/locomo10.json", "data/locomo10.zip")
TARGETS = {"recall": 0.60, "answers_per_query": 2.5, "cross_empty": 0.85}
DESCRIPTION_CHARS = 200
_EVIDENCE = re.compile(r"D(\d+):\d+")
_SESSION = re.compile(r"session_(\d+)$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


class DataError(Exception):
    """The LoCoMo data could not be found or read; the message says where it looked."""


def session_file(n: int) -> str:
    return f"project_session_{n:02d}.md"


def normalize(raw: dict[str, Any]) -> dict[str, Any]:
    """One conversation in the shape this bench uses, from either layout.

    ``{"sessions": {n: (date, turns)}, "summaries": {n: text}, "qa": [...]}``;
    a session without a summary (or with an empty one) is left out of
    ``summaries``.
    """
    talk = raw.get("conversation", raw)
    sessions: dict[int, tuple[str, list[dict[str, Any]]]] = {}
    for key, turns in talk.items():
        m = _SESSION.fullmatch(key)
        if m and isinstance(turns, list):
            n = int(m.group(1))
            sessions[n] = (str(talk.get(f"session_{n}_date_time", "")), turns)
    summaries: dict[int, str] = {}
    if "session_summary" in raw:
        for key, text in raw["session_summary"].items():
            m = re.search(r"session_(\d+)", key)
            if m:
                summaries[int(m.group(1))] = " ".join(str(text).split())
    else:
        for key, events in raw.items():
            if key.startswith("events_session_") and isinstance(events, dict):
                said = [
                    str(e)
                    for who, items in events.items()
                    if who != "date" and isinstance(items, list)
                    for e in items
                ]
                summaries[int(key.removeprefix("events_session_"))] = " ".join(
                    " ".join(said).split()
                )
    return {
        "sessions": sessions,
        "summaries": {n: s for n, s in summaries.items() if s},
        "qa": raw.get("qa", []),
    }


def condense(summary: str, limit: int = DESCRIPTION_CHARS) -> str:
    """The summary's sentences in order while they fit ``limit``; a long first one is cut."""
    out = ""
    for sentence in _SENTENCE_END.split(summary.strip()):
        candidate = f"{out} {sentence}".strip()
        if len(candidate) > limit:
            break
        out = candidate
    if out:
        return out
    cut = summary[:limit].rsplit(" ", 1)[0]
    return f"{cut}…"


def write_folder(conversation: dict[str, Any], folder: Path, variant: str = "header") -> None:
    """One memory file per session that has a summary."""
    folder.mkdir(parents=True)
    for n, summary in sorted(conversation["summaries"].items()):
        when, turns = conversation["sessions"].get(n, ("", []))
        if variant == "header":
            description, body = condense(summary), summary
        else:
            transcript = "\n".join(f"{t.get('speaker', '')}: {t.get('text', '')}" for t in turns)
            description, body = summary, f"{summary}\n\n{transcript}"
        name = f"Session {n} ({when})" if when else f"Session {n}"
        (folder / session_file(n)).write_text(
            f"---\nname: {json.dumps(name)}\n"
            f"description: {json.dumps(description, ensure_ascii=False)}\n"
            f"type: project\n---\n\n{body}\n",
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


def parse_blob(name: str, blob: bytes) -> list[dict[str, Any]]:
    """Conversations from ``locomo10.json`` bytes or from the zip of per-conversation files."""
    if name.endswith(".zip"):
        with zipfile.ZipFile(io.BytesIO(blob)) as z:
            members = sorted(n for n in z.namelist() if n.endswith(".json"))
            return [json.loads(z.read(m)) for m in members]
    data = json.loads(blob)
    return data if isinstance(data, list) else [data]


def from_git(repo: Path) -> tuple[str, bytes]:
    """The newest ``locomo10.json`` (or zip) on any branch of a local git copy."""
    refs = subprocess.run(
        ["git", "-C", str(repo), "rev-list", "--all", "--date-order"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    for commit in refs:
        for path in DATA_PATHS:
            done = subprocess.run(
                ["git", "-C", str(repo), "show", f"{commit}:{path}"],
                capture_output=True,
                check=False,
            )
            if done.returncode == 0:
                return f"{repo}@{commit[:10]}:{path}", done.stdout
    raise DataError(f"no {' or '.join(DATA_PATHS)} in any commit of {repo}")


def load(data: Path | None, mirror: Path | None) -> tuple[str, list[dict[str, Any]]]:
    """Where the data came from, and its conversations normalized."""
    if data is not None:
        if not data.is_file():
            raise DataError(f"{data} does not exist")
        source, blob = str(data), data.read_bytes()
    elif DEFAULT_DATA.is_file() and mirror is None:
        source, blob = str(DEFAULT_DATA), DEFAULT_DATA.read_bytes()
    else:
        places = [mirror] if mirror is not None else [m for m in MIRRORS if m.exists()]
        if not places:
            raise DataError(
                f"LoCoMo data not found: no {DEFAULT_DATA} and no mirror at "
                f"{' or '.join(map(str, MIRRORS))}; see this script's docstring"
            )
        source, blob = from_git(places[0])
    return source, [normalize(c) for c in parse_blob(source, blob)]


def evaluate(data: list[dict[str, Any]], workdir: Path, variant: str = "header") -> dict[str, Any]:
    folders = []
    for i, conversation in enumerate(data):
        folder = workdir / "tree" / f"conv-{i:02d}"
        write_folder(conversation, folder, variant)
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
        "files": sum(len(c["summaries"]) for c in data),
    }


def render(result: dict[str, Any]) -> str:
    lines = [f"{'metric':<20}{'value':>8}{'target':>9}  ok"]
    for key, target in TARGETS.items():
        value = result[key]
        ok = value <= target if key == "answers_per_query" else value >= target
        bound = "<=" if key == "answers_per_query" else ">="
        lines.append(f"{key:<20}{value:>8.3f}{bound:>5}{target:>4.2f}  {'yes' if ok else 'NO'}")
    lines.append(
        f"{result['queries']} queries over {result['folders']} conversation folders "
        f"({result['files']} session files, variant {result['variant']}; data {result['source']})"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--variant", choices=("header", "transcript"), default="header")
    parser.add_argument("--data", type=Path, help="locomo10.json or locomo10.zip")
    parser.add_argument("--mirror", type=Path, help="a local git copy of snap-research/LoCoMo")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    try:
        source, data = load(args.data, args.mirror)
    except DataError as exc:
        print(exc, file=sys.stderr)
        return 2
    logs.configure(level="WARNING")
    with tempfile.TemporaryDirectory() as tmp:
        result = evaluate(data, Path(tmp), args.variant)
    result.update(folders=len(data), variant=args.variant, source=source)
    print(json.dumps(result, indent=2) if args.json else render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
