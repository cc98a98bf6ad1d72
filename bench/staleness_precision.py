"""How many staleness verdicts are right on a development-corpus project.

Usage: python bench/staleness_precision.py [--project shop-backend] [--seed 5] [--json]

The corpus has memories but no code, so this builds the code: a git
checkout holding every path the project's memories cite (as extracted by
memoryd), committed before the memories were written. Then, after the
memories' time, each cited path is given a fate by a seeded draw: kept,
kept but changed by one or two commits, renamed (``git mv``) or deleted.
Directories move or vanish with everything under them. The expected verdict
of every (memory, citation) pair follows from those fates; the checker's
verdict is compared with it.

Bare file names (``pyproject.toml``) are looked up by name anywhere in the
checkout, so for them a rename can only be seen as "gone": those pairs are
counted, and reported separately, as what the checker cannot get right.

Baseline, same run: a check that only tests whether each cited path exists
on disk (what an agent can do without git): right on kept and deleted paths,
wrong on renamed and changed ones.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _git_corpus import git

from memoryd.check_replies import Verdict
from memoryd.indexer.citations import KIND_DIR, KIND_NAME
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.staleness.checks import Checker

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "bench" / "coding-memories"
WRITTEN = 1_700_000_000
FATES = ("kept", "changed", "renamed", "deleted")


def cited_paths(conn: sqlite3.Connection) -> dict[str, str]:
    """Every distinct cited target and its kind."""
    return dict(conn.execute("SELECT target, kind FROM citations ORDER BY target").fetchall())


def homes(targets: dict[str, str]) -> dict[str, str]:
    """Where each bare name lives: the cited path of that name, else ``config/<name>``."""
    paths = [t for t, k in targets.items() if k != KIND_NAME]
    out = {}
    for name in (t for t, k in targets.items() if k == KIND_NAME):
        same = [p for p in paths if p.rsplit("/", 1)[-1] == name]
        out[name] = same[0] if same else f"config/{name}"
    return out


def files_for(target: str, kind: str, home: dict[str, str]) -> list[str]:
    """The file(s) to create so that ``target`` exists."""
    if kind == KIND_DIR:
        return [f"{target}/__init__.py"]
    return [home.get(target, target)]


def build(
    repo: Path, targets: dict[str, str], home: dict[str, str], rng: random.Random
) -> tuple[dict[str, tuple[str, Any]], list[set[str]]]:
    """Create and commit every cited path, then give each one a fate in later commits.

    Returns the structural fates by path (``renamed`` with the new path, or
    ``deleted``) and, per later commit, the paths it touched (old and new).
    """
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for target, kind in targets.items():
        rel = repo / files_for(target, kind, home)[0]
        if rel.parent.exists() and not rel.parent.is_dir():
            continue
        rel.parent.mkdir(parents=True, exist_ok=True)
        if not rel.is_dir():
            rel.write_text(f"# {rel.name}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial", when=WRITTEN - 86400)
    fates: dict[str, tuple[str, Any]] = {}
    commits: list[set[str]] = []
    when = WRITTEN + 3600

    def commit(message: str, touched: set[str], *args: str) -> None:
        nonlocal when
        git(repo, "commit", "-q", *args, "-m", message, when=when)
        commits.append(touched)
        when += 3600

    # Directories first, so a path below a moved or deleted directory just follows it.
    for target in sorted(targets, key=lambda t: (targets[t] != KIND_DIR, t)):
        kind = targets[target]
        path = home.get(target, target)
        if path in fates or (path != target and path in targets):
            continue  # a bare name for a cited path shares that path's fate
        if any(path.startswith(t + "/") for t in fates):
            continue
        fate = rng.choice(FATES)
        below = set(git(repo, "ls-files", "--", path).split())
        if fate == "changed":
            changed = files_for(target, kind, home)[0]
            for n in range(rng.randint(1, 2)):
                with open(repo / changed, "a") as fh:
                    fh.write(f"change {n}\n")
                commit(f"change {target}", {changed}, "-a")
        elif fate == "renamed":
            new = _renamed(path, kind)
            git(repo, "mv", path, new)
            commit(f"move {target}", below | {new + p[len(path) :] for p in below})
            fates[path] = ("renamed", new)
        elif fate == "deleted":
            git(repo, "rm", "-q", "-r", path)
            commit(f"drop {target}", below)
            fates[path] = ("deleted", None)
    return fates, commits


def _renamed(path: str, kind: str) -> str:
    if kind == KIND_DIR:
        return f"{path}_v2"
    stem, dot, ext = path.rpartition(".")
    return f"{stem}_v2{dot}{ext}" if dot else f"{path}_v2"


def expected(
    target: str, fates: dict[str, tuple[str, Any]], home: dict[str, str], commits: list[set[str]]
) -> tuple[str, Any]:
    """What should be reported for ``target``: moved, gone, changed by n commits, or kept."""
    path = home.get(target, target)
    for moved, (fate, new) in fates.items():
        if path == moved or path.startswith(moved + "/"):
            return (fate, None if new is None else new + path[len(moved) :])
    count = sum(1 for c in commits if any(p == path or p.startswith(path + "/") for p in c))
    return ("changed", count) if count else ("kept", None)


def observed(target: str, verdict: Verdict | None) -> tuple[str, Any]:
    assert verdict is not None, "every memory's folder has a checkout here"
    if target in verdict["missing"]:
        return ("deleted", None)
    if target in verdict["renamed"]:
        return ("renamed", verdict["renamed"][target])
    for change in verdict["changed_since"]:
        if change["path"] == target:
            return ("changed", change["commits"])
    return ("kept", None)


def run(project: str, seed: int, work: Path) -> dict[str, Any]:
    memdir = work / "memory"
    shutil.copytree(CORPUS / "projects" / project, memdir)
    for f in memdir.iterdir():
        os.utime(f, (WRITTEN, WRITTEN))
    store = IndexStore(work / "index.db")
    try:
        Syncer(store).sync_tree(str(memdir))
        targets = cited_paths(store.conn)
        home = homes(targets)
        fates, commits = build(work / "checkout", targets, home, random.Random(seed))

        def write(fn: Callable[[sqlite3.Connection], None]) -> None:
            with store.transaction() as conn:
                fn(conn)

        checker = Checker({str(memdir): str(work / "checkout")})
        result = checker.check_dir(store.conn, str(memdir), write)
    finally:
        store.close()
    tally: Counter[str] = Counter()
    wrong = []
    for memory in result["memories"]:
        for target in memory["citations"]:
            want = expected(target, fates, home, commits)
            got = observed(target, memory["staleness"])
            kind = targets[target]
            group = "bare name" if kind == KIND_NAME else "path"
            tally[f"{group} total"] += 1
            # Existence alone gets kept paths and deleted ones right, nothing else.
            tally["baseline right"] += int(want[0] in ("kept", "deleted"))
            if got == want:
                tally[f"{group} right"] += 1
            else:
                wrong.append(
                    {"memory": memory["filename"], "target": target, "want": want, "got": got}
                )
    fate_counts = Counter(expected(t, fates, home, commits)[0] for t in targets)
    return {
        "project": project,
        "citations": len(targets),
        "fates": dict(fate_counts),
        "tally": dict(tally),
        "wrong": wrong,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", default="shop-backend")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not (CORPUS / "projects" / args.project).is_dir():
        print(f"corpus project not found: {CORPUS / 'projects' / args.project}", file=sys.stderr)
        return 1
    work = Path(tempfile.mkdtemp(prefix="staleness-precision-"))
    try:
        out = run(args.project, args.seed, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    t = out["tally"]
    pairs = t.get("path total", 0) + t.get("bare name total", 0)
    right = t.get("path right", 0) + t.get("bare name right", 0)
    print(f"project {out['project']}: {out['citations']} cited paths, fates {out['fates']}")
    print(f"{'verdicts':28} {'right':>6} {'total':>6}")
    for label, group in (("paths (file / directory)", "path"), ("bare file names", "bare name")):
        print(f"{label:28} {t.get(group + ' right', 0):>6} {t.get(group + ' total', 0):>6}")
    print(f"{'all':28} {right:>6} {pairs:>6}")
    print(f"{'baseline: exists on disk':28} {t.get('baseline right', 0):>6} {pairs:>6}")
    for w in out["wrong"]:
        print(f"  wrong: {w['memory']}: {w['target']}: expected {w['want']}, got {w['got']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
