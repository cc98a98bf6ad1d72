"""Dump (or compare) the local ranker's answers and scores for every quality query.

Proves that a change to how the ranker gets its term statistics leaves every
score unchanged: run it on the old code with ``--out old.json``, on the new
code with ``--compare old.json``; it lists every query whose selected files or
any candidate's score differ (exact float equality), and exits 1 if there are any.

Each query of the corpus's queries.jsonl goes through ``Selector.run`` (the
shipped path: index, manifest, rules, ranking), and the scores of every
candidate of its folder are recorded as well, not only the selected ones.

Usage: .venv/bin/python bench/score_identity.py [--corpus DIR] (--out FILE | --compare FILE)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memoryd import logs
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.select.manifest import candidates_for
from memoryd.select.selector import Selector
from memoryd.select.wiring import select_unrecorded

DEFAULT_CORPUS = Path(__file__).resolve().parents[1].parent / "shared/bench/coding-memories"


def answers(corpus: Path, workdir: Path) -> list[dict[str, Any]]:
    store = IndexStore(workdir / "index.db")
    Syncer(store).sync_tree(str(corpus / "projects"))
    selector = Selector()
    out = []
    for n, line in enumerate((corpus / "queries.jsonl").read_text().splitlines()):
        q = json.loads(line)
        folder = str(corpus / "projects" / q["project"])
        params = {
            "query": q["query"],
            "dir": folder,
            "surfaced": q["surfaced"],
            "recent_tools": q["recent_tools"],
            "ranker": "local",
        }
        result = select_unrecorded(selector, store.conn, params)
        manifest = selector.manifests.get(store.conn, folder)
        cands = [c for _, c in candidates_for(store.conn, manifest, q["query"])]
        scores = selector.local.scores(q["query"], cands)
        out.append(
            {
                "n": n,
                "query": q["query"],
                "selected": [(s["filename"], s["score"]) for s in result["selected"]],
                "scores": {fn: repr(v) for fn, v in sorted(scores.items())},
            }
        )
    store.close()
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--out", type=Path, help="write this run's answers here")
    group.add_argument("--compare", type=Path, help="compare this run with a saved one")
    args = parser.parse_args(argv)
    logs.configure(level="WARNING")
    if not (args.corpus / "queries.jsonl").is_file():
        print(f"corpus not found at {args.corpus} (pass --corpus DIR)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        now = answers(args.corpus, Path(tmp))
    if args.out:
        args.out.write_text(json.dumps(now, indent=1))
        print(f"{len(now)} queries written to {args.out}")
        return 0
    before = json.loads(args.compare.read_text())
    differ = [
        (old["n"], old["query"])
        for old, new in zip(before, now, strict=True)
        if old["selected"] != [list(s) for s in new["selected"]] or old["scores"] != new["scores"]
    ]
    scored = sum(len(a["scores"]) for a in now)
    print(
        f"{len(now)} queries, {scored} candidate scores compared: "
        f"{len(differ)} queries differ (exact float equality)"
    )
    for n, query in differ:
        print(f"  #{n}: {query}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
