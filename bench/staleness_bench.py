"""Memory-rot checks at scale: full check, incremental re-checks, and ``select`` with verdicts.

Usage: python bench/staleness_bench.py [--files 20000] [--commits 5000]
       [--memories 500] [--runs 3] [--queries 200] [--workdir DIR] [--json]

Builds (bench/_git_corpus.py, with git fast-import) a checkout of ``--files``
files and ``--commits`` commits, and a folder of ``--memories`` memories that
each cite three paths of the first commit (some since renamed or deleted,
some changed after the memory was written), indexes the folder, then times
the same code the daemon's background checker runs (memoryd.staleness):

* full: a cold checker (ls-files, the whole history, every verdict written);
* after a commit: one new commit, then the warm checker's pass (HEAD moved,
  so every memory is re-judged, but only the new commit's history is read);
* after a memory edit: one memory rewritten and re-indexed, then a pass
  (only that memory is re-judged);
* select p50 over ``--queries`` local-ranker queries, with the verdict table
  filled and emptied (alternated twice, same queries).

Baseline, same run: what a check without memoryd's caches costs, one
``git log --follow`` and one ``git ls-files`` per citation, timed on 20
memories and scaled to the folder.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _git_corpus import COMMIT_STEP_S, GeneratedCheckout, generate, git

from memoryd import logs
from memoryd.config import Config
from memoryd.indexer.store import IndexStore, open_reader
from memoryd.indexer.sync import Syncer
from memoryd.select.wiring import make_selector, select_unrecorded
from memoryd.staleness.checks import Checker, FolderCheck

TOPICS = ["billing", "retry", "cache", "auth", "export", "search", "upload", "report", "queue"]
BASELINE_MEMORIES = 20


def write_memories(folder: Path, repo: GeneratedCheckout, count: int, seed: int = 3) -> None:
    """``count`` memories citing three initial paths each, written mid-history."""
    rng = random.Random(seed)
    folder.mkdir(parents=True)
    middle = (repo.start + repo.end) // 2
    for i in range(count):
        cited = rng.sample(repo.initial, 3)
        topic = rng.choice(TOPICS)
        body = (
            f"The {topic} path is implemented in `{cited[0]}:{rng.randint(1, 90)}`.\n"
            f"Tests for it sit next to {cited[1]}; the helper is [here]({cited[2]}).\n"
        )
        path = folder / f"project_{topic}_{i:04d}.md"
        path.write_text(
            f"---\nname: {topic} note {i}\ndescription: how {topic} works in module {i}\n"
            f"type: project\n---\n{body}",
            encoding="utf-8",
        )
        when = middle + rng.randint(-50, 50) * COMMIT_STEP_S
        os.utime(path, (when, when))


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = fn()
    return (time.perf_counter() - started) * 1000, value


def span(values: list[float]) -> str:
    return f"{min(values):.1f}-{max(values):.1f}"


class Bench:
    def __init__(self, work: Path, args: argparse.Namespace) -> None:
        self.args = args
        self.repo = generate(work / "checkout", args.files, args.commits)
        self.folder = work / "memory"
        write_memories(self.folder, self.repo, args.memories)
        self.store = IndexStore(work / "index.db")
        Syncer(self.store).sync_tree(str(self.folder))
        self.reader = open_reader(work / "index.db")

    def write(self, fn: Callable[[sqlite3.Connection], None]) -> None:
        with self.store.transaction() as conn:
            fn(conn)

    def sql(self, statement: str) -> None:
        def run(conn: sqlite3.Connection) -> None:
            conn.execute(statement)

        self.write(run)

    def check(self, checker: Checker, details: bool = False) -> FolderCheck:
        """A pass as the daemon's background checker runs it (``details``: as ``check``)."""
        folder = str(self.folder)
        return checker.check_dir(self.store.conn, folder, self.write, details=details)

    def full(self) -> list[float]:
        out = []
        for _ in range(self.args.runs):
            self.sql("DELETE FROM staleness")
            ms, result = timed(lambda: self.check(Checker({str(self.folder): str(self.repo.path)})))
            assert result["rechecked"] == self.args.memories, result["rechecked"]
            out.append(ms)
        self.stale = self.store.conn.execute("SELECT sum(stale) FROM staleness").fetchone()[0]
        return out

    def after_commit(self, checker: Checker) -> list[float]:
        out = []
        for n in range(self.args.runs):
            name = self.repo.initial[n]
            (self.repo.path / name).write_text(f"changed {n}\n")
            git(self.repo.path, "commit", "-q", "-am", f"bench {n}", when=self.repo.end + n + 1)
            ms, result = timed(lambda: self.check(checker))
            assert result["rechecked"] == self.args.memories
            out.append(ms)
        return out

    def after_edit(self, checker: Checker) -> list[float]:
        out = []
        for n in range(self.args.runs):
            memory = next(self.folder.glob("project_*_0001.md"))
            memory.write_text(memory.read_text() + f"\nEdit {n}.\n")
            Syncer(self.store).sync_path(str(memory))
            ms, result = timed(lambda: self.check(checker))
            assert result["rechecked"] == 1, result["rechecked"]
            out.append(ms)
        return out

    def select_p50(self) -> tuple[list[float], list[float]]:
        selector = make_selector(Config())
        rng = random.Random(11)
        queries = [
            f"where is the {rng.choice(TOPICS)} code for module {rng.randint(0, 499)}?"
            for _ in range(self.args.queries)
        ]
        folder = str(self.folder)
        saved = self.reader.execute("SELECT count(*) FROM staleness").fetchone()[0]

        def one(query: str) -> float:
            params = {"query": query, "dir": folder, "ranker": "local"}
            return timed(lambda: select_unrecorded(selector, self.reader, params))[0]

        def p50() -> float:
            return statistics.median(one(q) for q in queries)

        p50()  # warm the manifest and ranker caches
        with_data, without = [], []
        for _ in range(2):
            with_data.append(p50())
            self.sql("UPDATE staleness SET content_hash = 'x'")  # hides every verdict
            without.append(p50())
            self.check(Checker({folder: str(self.repo.path)}))
        assert saved > 0
        return with_data, without

    def baseline(self) -> float:
        """Per-citation git calls for a few memories, scaled to the whole folder (ms)."""
        memories = sorted(self.folder.glob("*.md"))[:BASELINE_MEMORIES]
        started = time.perf_counter()
        for memory in memories:
            since = int(memory.stat().st_mtime)
            rows = self.reader.execute(
                "SELECT target FROM citations WHERE path = ?", (str(memory),)
            ).fetchall()
            for (path,) in rows:
                for args in (
                    ["ls-files", "--", path],
                    ["log", "--follow", "--format=%ct", f"--since={since}", "--", path],
                ):
                    cmd = ["git", "-C", str(self.repo.path), *args]
                    subprocess.run(cmd, capture_output=True, check=False)
        elapsed = (time.perf_counter() - started) * 1000
        scale: int = self.args.memories
        return elapsed * scale / len(memories)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--commits", type=int, default=5_000)
    parser.add_argument("--memories", type=int, default=500)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    logs.configure(level="WARNING")  # one selector.run event per query would drown the table
    work = Path(tempfile.mkdtemp(prefix="staleness-bench-", dir=args.workdir))
    try:
        started = time.perf_counter()
        bench = Bench(work, args)
        setup_s = time.perf_counter() - started
        full = bench.full()
        warm = Checker({str(bench.folder): str(bench.repo.path)})
        bench.check(warm)
        commit = bench.after_commit(warm)
        edit = bench.after_edit(warm)
        with_data, without = bench.select_p50()
        baseline = bench.baseline()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rows = {
        "setup_s": round(setup_s, 1),
        "stale_memories": bench.stale,
        "full_check_ms": full,
        "recheck_after_commit_ms": commit,
        "recheck_after_memory_edit_ms": edit,
        "select_p50_ms_with_verdicts": with_data,
        "select_p50_ms_without_verdicts": without,
        "baseline_per_citation_git_ms": baseline,
        "loadavg": Path("/proc/loadavg").read_text().split()[:3],
    }
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(
        f"checkout: {args.files} files, {args.commits} commits; {args.memories} memories "
        f"x 3 citations; setup {setup_s:.1f} s; {bench.stale} stale memories"
    )
    print(f"{'measure':38} {'ms (range over runs)':>22}")
    print(f"{'full check (cold)':38} {span(full):>22}")
    print(f"{'re-check after one commit':38} {span(commit):>22}")
    print(f"{'re-check after one memory edit':38} {span(edit):>22}")
    print(f"{'select p50, verdicts present':38} {span(with_data):>22}")
    print(f"{'select p50, no verdicts':38} {span(without):>22}")
    print(f"{'baseline: git per citation (scaled)':38} {baseline:>22.0f}")
    print(f"full check vs baseline: {baseline / min(full):.1f}x faster")
    print(f"loadavg: {' '.join(rows['loadavg'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
