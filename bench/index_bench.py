"""Index speed: cold index against the engine floor, no-change and one-file re-index, RSS.

Usage: python bench/index_bench.py [--sizes 1000,10000,100000] [--repeat 1] [--workdir DIR]
                                   [--phases]

Each size gets a fresh synthetic tree (bench/_corpus.py). Two baselines run in
the same run on the same files: a bare Python loop that walks the tree and
reads every file, and the engine floor: the same walk plus memoryd's parser on
every file and one bulk FTS5 build of the parsed text (one transaction into a
bare FTS5 table), the least an indexer built on these parts must spend.
Indexing and the floor run in child processes, so peak RSS comes from the
kernel. ``--repeat`` runs the cold index and the floor that many times; the
ratio to the floor is given for the best and the worst run. ``--phases`` adds,
per size, the CPU time of each step of a first index done in one process
(walk, read + parse, analysis, row building, inserts, FTS5 build, citations
and commit), to show where the time goes.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _corpus import make_tree

CHILD = r"""
import json, os, resource, sys, time
from pathlib import Path
from memoryd.indexer import coldload, sync
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.select.analysis import TERM_ANALYSIS
db, root, touch = sys.argv[1], sys.argv[2], sys.argv[3]
if touch:
    p = Path(touch); p.write_text(p.read_text() + "\nedited\n")
# The wall-time split of a cold load, seen from the writer: every row it takes
# is timed as waiting (inside the rows iterator) or writing (between rows).
split = {"wait": 0.0, "write": 0.0, "head_wait": 0.0}
marks = {}
def worker_cpu():
    from multiprocessing import forkserver
    pid = forkserver._forkserver._forkserver_pid
    total = 0.0
    for tid in os.listdir(f"/proc/{pid}/task"):
        for child in open(f"/proc/{pid}/task/{tid}/children").read().split():
            fields = open(f"/proc/{child}/stat").read().rpartition(")")[2].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total
def from_workers(pool, stats, now, analysis):
    marks["pool"], marks["n"] = time.perf_counter(), pool.workers
    for i, row in enumerate(real_from_workers(pool, stats, now, analysis)):
        if i == len(stats) - 1:  # the pool is still up: its workers can be read
            marks["worker_cpu"] = worker_cpu()
        yield row
    marks["workers_end"] = time.perf_counter()
def timed_rows(stats, now, analysis):
    marks["rows"] = t = time.perf_counter()
    for row in real_rows_for(stats, now, analysis):
        got = time.perf_counter()
        split["head_wait" if "pool" not in marks else "wait"] += got - t
        yield row
        t = time.perf_counter()
        split["write"] += t - got
    marks["last_row"] = time.perf_counter()
real_rows_for, sync.rows_for = sync.rows_for, timed_rows
real_from_workers, coldload._from_workers = coldload._from_workers, from_workers
store = IndexStore(Path(db), TERM_ANALYSIS)
t = time.perf_counter()
res = Syncer(store).sync_tree(root)
end = time.perf_counter()
secs = end - t
store.close()
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
if "rows" in marks:
    split["walk"] = marks["rows"] - t
    split["tail"] = end - marks["last_row"]
if "workers_end" in marks:
    span = marks["workers_end"] - marks["pool"]
    split["workers_cpu"] = marks["worker_cpu"]
    split["workers_idle"] = span * marks["n"] - marks["worker_cpu"]
print(json.dumps({"seconds": secs, "added": res.added, "updated": res.updated,
                  "rows": res.rows_written, "rss_mb": rss, "split": split}))
"""

FLOOR = r"""
import os, sqlite3, sys, time
from memoryd.indexer.parse import parse_file
root, db = sys.argv[1], sys.argv[2]
t = time.perf_counter()
rows = []
for dirpath, _dirs, files in os.walk(root):
    for name in files:
        path = os.path.join(dirpath, name)
        p = parse_file(path, name, os.stat(path).st_size)
        rows.append((name, p.name, p.description, p.body))
conn = sqlite3.connect(db, isolation_level=None)
conn.execute("PRAGMA journal_mode = WAL")
conn.execute("CREATE VIRTUAL TABLE fts USING fts5(filename, name, description, body, "
             "tokenize='porter unicode61')")
conn.execute("BEGIN")
conn.executemany("INSERT INTO fts VALUES (?, ?, ?, ?)", rows)
conn.execute("COMMIT")
conn.close()
print(time.perf_counter() - t)
"""

PHASES = r"""
import json, sys, time
from pathlib import Path
from memoryd.indexer.citations import replace_citations
from memoryd.indexer.coldload import read_file
from memoryd.indexer.rows import INSERT_SQL, file_row, memory_terms
from memoryd.indexer.scanner import stat_entry, walk_dirs
from memoryd.indexer.store import IndexStore
from memoryd.select.analysis import TERM_ANALYSIS
db, root = sys.argv[1], sys.argv[2]
out, clock = {}, [time.process_time()]
def phase(name):
    now = time.process_time(); out[name] = now - clock[0]; clock[0] = now
stats = [st for d, es in walk_dirs(root) for st in (stat_entry(e, d) for e in es)]
phase("walk")
parsed = [read_file(st) for st in stats]
phase("read+parse")
terms = [memory_terms(st.filename, p, TERM_ANALYSIS) for st, p in parsed]
phase("analysis")
rows = [file_row(st, p, t, 0.0) for (st, p), t in zip(parsed, terms)]
phase("rows")
store = IndexStore(Path(db), TERM_ANALYSIS); conn = store.conn
phase("open")
conn.execute("BEGIN IMMEDIATE"); conn.execute('DROP TRIGGER "files_ai"')
conn.executemany(INSERT_SQL, rows)
phase("insert")
conn.execute("INSERT INTO files_fts(files_fts) VALUES ('rebuild')")
phase("fts build")
cur = conn.execute("SELECT path, kind, description, body FROM files WHERE kind = 'memory'")
while chunk := cur.fetchmany(500):
    replace_citations(conn, chunk)
conn.execute("ROLLBACK")
phase("citations")
print(json.dumps(out))
"""


def bare_read(root: Path) -> float:
    started = time.perf_counter()
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            with open(os.path.join(dirpath, name), "rb") as fh:
                fh.read()
    return time.perf_counter() - started


def _remove_db(db: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


def _child(script: str, *args: str) -> str:
    """Run ``script`` in a fresh interpreter (its own peak RSS); its standard output."""
    out = subprocess.run(
        [sys.executable, "-c", script, *args], check=True, capture_output=True, text=True
    )
    return out.stdout


def engine_floor(root: Path, db: Path) -> float:
    _remove_db(db)
    return float(_child(FLOOR, str(root), str(db)))


def phases(root: Path, db: Path) -> dict[str, float]:
    _remove_db(db)
    result: dict[str, float] = json.loads(_child(PHASES, str(db), str(root)))
    return result


def run_child(db: Path, root: Path, touch: str = "") -> dict[str, Any]:
    result: dict[str, Any] = json.loads(_child(CHILD, str(db), str(root), touch))
    return result


def bench(size: int, workdir: Path, repeat: int, with_phases: bool) -> dict[str, Any]:
    root = workdir / f"tree-{size}"
    files = make_tree(root, size)
    db = workdir / f"index-{size}.db"
    bare = min(bare_read(root) for _ in range(3))
    loadavg = os.getloadavg()[0]
    floors, colds, rss, splits = [], [], [], []
    for _ in range(repeat):
        floors.append(engine_floor(root, workdir / f"floor-{size}.db"))
        _remove_db(db)
        cold = run_child(db, root)
        assert cold["added"] == size
        colds.append(cold["seconds"])
        rss.append(cold["rss_mb"])
        splits.append(cold["split"])
    nochange = run_child(db, root)
    one = run_child(db, root, touch=str(files[len(files) // 2]))
    assert nochange["rows"] == 0 and one["updated"] == 1
    ratios = [c / f for c, f in zip(colds, floors, strict=True)]
    steps = phases(root, workdir / f"phases-{size}.db") if with_phases else {}
    return {
        **{f"phase {k}": v for k, v in steps.items()},
        "files": size,
        "loadavg": loadavg,
        "bare_read_s": bare,
        "floor_s": min(floors),
        "cold_s": min(colds),
        "cold_worst_s": max(colds),
        "cold_files_per_s": size / min(colds),
        "cold_files_per_s_worst": size / max(colds),
        "cold_vs_bare": min(colds) / bare,
        "cold_vs_floor_best": min(ratios),
        "cold_vs_floor_worst": max(ratios),
        "nochange_s": nochange["seconds"],
        "one_changed_s": one["seconds"],
        "peak_rss_mb": max([*rss, nochange["rss_mb"], one["rss_mb"]]),
        "splits": splits,
    }


_SPLIT = ("walk", "head_wait", "wait", "write", "tail", "workers_cpu", "workers_idle")
"""The writer's wall time in a cold run: the walk; reading the head of the tree
itself (all of it below the workers' threshold); waiting for the workers'
rows; writing rows; after the last row (FTS5 build, citations, commit); and
the workers' CPU and idle time, summed over the workers from the pool's start
to the last row."""


def print_table(rows: list[dict[str, Any]]) -> None:
    header = (
        f"{'files':>7} | {'bare read':>9} | {'floor':>8} | {'cold index':>15} | "
        f"{'files/s':>13} | {'x bare':>6} | {'x floor':>9} | {'no-change':>9} | "
        f"{'1 changed':>9} | {'peak RSS':>8}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['files']:>7} | {r['bare_read_s']:>7.3f} s | {r['floor_s']:>6.3f} s | "
            f"{r['cold_s']:>5.2f}-{r['cold_worst_s']:<5.2f} s | "
            f"{r['cold_files_per_s_worst']:>6.0f}-{r['cold_files_per_s']:<6.0f} | "
            f"{r['cold_vs_bare']:>6.1f} | "
            f"{r['cold_vs_floor_best']:>4.2f}-{r['cold_vs_floor_worst']:<4.2f} | "
            f"{r['nochange_s']:>7.3f} s | {r['one_changed_s']:>7.3f} s | "
            f"{r['peak_rss_mb']:>5.1f} MB"
        )
    for r in rows:
        steps = {k.removeprefix("phase "): v for k, v in r.items() if k.startswith("phase ")}
        if steps:
            cells = ", ".join(f"{k} {v:.3f}" for k, v in steps.items())
            print(f"{r['files']:,} files, CPU s per step in one process: {cells}")
    for r in rows:
        for i, split in enumerate(r["splits"], 1):
            cells = ", ".join(f"{k} {split[k]:.3f}" for k in _SPLIT if k in split)
            print(f"{r['files']:,} files, cold run {i}, wall s: {cells}")
    for r in rows:
        ok = r["cold_vs_floor_worst"] <= 2 and r["cold_files_per_s_worst"] >= 10_000
        print(
            f"{r['files']:,} files: within 2x of the floor and >= 10,000 files/s in every run: "
            f"{'met' if ok else 'MISSED'} (loadavg {r['loadavg']:.2f})"
        )


def compile_sources() -> None:
    """Write memoryd's bytecode, as installing a package does, before anything is timed.

    The worker processes' fork server imports the parser inside the timed cold
    index. In an editable checkout under ``PYTHONDONTWRITEBYTECODE=1`` (set on
    the development machine) a module edited since its last ``.pyc`` would be
    compiled again by every process, which a user's installed copy never does.
    """
    root = Path(__file__).resolve().parents[1]
    for package in ("memoryd", "indexer", "daemon", "ipc"):
        compileall.compile_dir(root / package, quiet=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--phases", action="store_true", help="time each step of a first index")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    compile_sources()
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        rows = [bench(size, Path(tmp), args.repeat, args.phases) for size in sizes]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print_table(rows)


if __name__ == "__main__":
    main()
