"""Index speed: a first index and a no-change resync against one plain header scan.

Usage: python bench/index_bench.py [--sizes 10000] [--repeat 3] [--workdir DIR] [--phases]
                                   [--daemon] [--json]

Each size gets a fresh synthetic tree (bench/_corpus.py). The baseline, run
on the same files in the same run, is one plain header scan: walk the tree
and parse every file's header, what an agent without memoryd does per prompt.
A first index (into an empty index), a no-change resync and a resync with one
file changed each run in a child process, so peak RSS comes from the kernel.
``--repeat`` runs the scan and the first index that many times, interleaved;
figures are given as ranges over the runs. ``--phases`` adds, per size, the
CPU time of each step of a first index done by hand in one process (walk,
read + parse, row building, inserts, FTS5 build, citations), to
show where the time goes. ``--daemon`` compares, as whole processes started
``--repeat`` times each, interleaved, ``memoryd index`` of the tree with no
daemon running (it starts one, which indexes the tree, then rescans it on the
command's request) with a daemon's own first start on it until ``status``
says ready (bench/_daemon.py), in wall time and in CPU time (which other work
on the machine moves less): what starting the daemon from a command costs.

The budgets: a first index of 10k files within 5 s with its progress counted
file by file, and a no-change resync of 10k within 0.5 s.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _corpus import make_tree
from _daemon import daemon_env, running_daemon
from _limits import cpu_s

from memoryd.indexer.parse import parse_file
from memoryd.indexer.scanner import walk_dirs

BUDGET_FILES = 10_000
FIRST_INDEX_BUDGET_S = 5.0
NO_CHANGE_BUDGET_S = 0.5

CHILD = r"""
import json, resource, sys, time
from pathlib import Path
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
db, root, touch = sys.argv[1], sys.argv[2], sys.argv[3]
if touch:
    p = Path(touch); p.write_text(p.read_text() + "\nedited\n")
class Progress:
    done = 0
    def advance(self):
        self.done += 1
progress = Progress()
store = IndexStore(Path(db))
t = time.perf_counter()
res = Syncer(store, progress=progress).sync_tree(root)
secs = time.perf_counter() - t
store.close()
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": secs, "added": res.added, "updated": res.updated,
                  "rows": res.rows_written, "progress": progress.done, "rss_mb": rss}))
"""

PHASES = r"""
import json, sys, time
from pathlib import Path
from memoryd.indexer.records import INSERT_SQL, file_row
from memoryd.indexer.scanner import stat_entry, walk_dirs
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import read_file
from memoryd.indexer.citations import replace_citations
db, root = sys.argv[1], sys.argv[2]
out, clock = {}, [time.process_time()]
def phase(name):
    now = time.process_time(); out[name] = now - clock[0]; clock[0] = now
stats = [st for d, es in walk_dirs(root) for e in es if (st := stat_entry(e, d))]
phase("walk")
parsed = [read_file(st) for st in stats]
phase("read+parse")
rows = [file_row(st, p, 0.0) for st, p in parsed]
phase("rows")
store = IndexStore(Path(db)); conn = store.conn
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


def header_scan(root: Path) -> float:
    """One plain header scan: every memory file under ``root`` stat'ed, read and parsed."""
    started = time.perf_counter()
    for directory, entries in walk_dirs(str(root)):
        for entry in entries:
            parse_file(os.path.join(directory, entry.name), entry.name, entry.stat().st_size)
    return time.perf_counter() - started


def _remove_db(db: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


def _child(script: str, *args: str) -> dict[str, Any]:
    """Run ``script`` in a fresh interpreter (its own peak RSS); the JSON it prints."""
    out = subprocess.run(
        [sys.executable, "-c", script, *args], check=True, capture_output=True, text=True
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cli_index(root: Path, workdir: Path) -> tuple[float, float]:
    """``memoryd index root`` with no daemon running, as whole processes: wall and CPU seconds.

    The command starts a daemon (its config names ``root``, so ``root`` is a root
    of it: a folder of memory folders), waits for its first index and asks it to
    rescan; CPU is the command's and the daemon's.
    """
    home = workdir / "cli-home"
    shutil.rmtree(home, ignore_errors=True)
    env = daemon_env(home, "WARNING")
    config = home / "config" / "memoryd" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(f"roots:\n  - {json.dumps(str(root))}\n", encoding="utf-8")
    env["MEMORYD_SOCKET"] = str(Path(tempfile.mkdtemp(prefix="mdb-", dir="/tmp")) / "s.sock")
    memoryd = [sys.executable, "-m", "memoryd"]
    started, cpu = time.perf_counter(), _children_cpu()
    subprocess.run([*memoryd, "index", str(root)], check=True, capture_output=True, env=env)
    wall = time.perf_counter() - started
    cpu = _children_cpu() - cpu
    status = subprocess.check_output([*memoryd, "status", "--json"], env=env)
    cpu += cpu_s(json.loads(status)["pid"])
    subprocess.check_output([*memoryd, "stop"], env=env)
    shutil.rmtree(Path(env["MEMORYD_SOCKET"]).parent, ignore_errors=True)
    return wall, cpu


def daemon_first_index(root: Path, repeat: int, workdir: Path) -> dict[str, Any]:
    """``memoryd index`` and a daemon's first start to ready on ``root``, interleaved.

    The ratio is taken per pair (one of each, run back to back)."""
    loadavg = os.getloadavg()[0]
    cli, ready, cli_cpu, ready_cpu = [], [], [], []
    for _ in range(repeat):
        wall, cpu = cli_index(root, workdir)
        cli.append(wall)
        cli_cpu.append(cpu)
        with running_daemon([root]) as daemon:
            ready_cpu.append(cpu_s(daemon.pid))
            ready.append(daemon.ready_s)
    pairs = list(zip(ready, cli, strict=True))
    cpu_pairs = list(zip(ready_cpu, cli_cpu, strict=True))
    return {
        "cli_s": [min(cli), max(cli)],
        "ready_s": [min(ready), max(ready)],
        "ready_x_cli": [min(r / c for r, c in pairs), max(r / c for r, c in pairs)],
        "cli_cpu_s": [min(cli_cpu), max(cli_cpu)],
        "ready_cpu_s": [min(ready_cpu), max(ready_cpu)],
        "cpu_x_cli": [min(r / c for r, c in cpu_pairs), max(r / c for r, c in cpu_pairs)],
        "loadavg": [loadavg, os.getloadavg()[0]],
    }


def bench(
    size: int, workdir: Path, repeat: int, with_phases: bool, with_daemon: bool
) -> dict[str, Any]:
    root = workdir / f"tree-{size}"
    files = make_tree(root, size)
    db = workdir / f"index-{size}.db"
    loadavg = os.getloadavg()[0]
    header_scan(root)  # the page cache warm for both sides
    scans, firsts, rss = [], [], []
    for _ in range(repeat):
        scans.append(header_scan(root))
        _remove_db(db)
        first = _child(CHILD, str(db), str(root), "")
        assert first["added"] == first["progress"] == size, first
        firsts.append(first["seconds"])
        rss.append(first["rss_mb"])
    nochange = [_child(CHILD, str(db), str(root), "") for _ in range(repeat)]
    one = _child(CHILD, str(db), str(root), str(files[len(files) // 2]))
    assert all(n["rows"] == 0 for n in nochange) and one["updated"] == 1
    nochange_s = [n["seconds"] for n in nochange]
    steps = {}
    if with_phases:
        _remove_db(workdir / f"phases-{size}.db")
        steps = _child(PHASES, str(workdir / f"phases-{size}.db"), str(root))
    daemon = daemon_first_index(root, repeat, workdir) if with_daemon else None
    scan = min(scans)
    return {
        "files": size,
        "loadavg": loadavg,
        "scan_s": [min(scans), max(scans)],
        "first_s": [min(firsts), max(firsts)],
        "first_x_scan": [min(firsts) / scan, max(firsts) / scan],
        "nochange_s": [min(nochange_s), max(nochange_s)],
        "nochange_x_scan": [min(nochange_s) / scan, max(nochange_s) / scan],
        "one_changed_s": one["seconds"],
        "peak_rss_mb": max([*rss, *(n["rss_mb"] for n in nochange), one["rss_mb"]]),
        "phases": steps,
        "daemon": daemon,
        "loadavg_end": os.getloadavg()[0],
    }


def _range(pair: list[float], fmt: str) -> str:
    low, high = (format(v, fmt) for v in pair)
    return low if low == high else f"{low}-{high}"


def print_table(rows: list[dict[str, Any]]) -> None:
    header = (
        f"{'files':>7} | {'header scan':>13} | {'first index':>13} | {'x scan':>11} | "
        f"{'no-change':>13} | {'x scan':>11} | {'1 changed':>9} | {'peak RSS':>8}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['files']:>7} | {_range(r['scan_s'], '.3f'):>11} s | "
            f"{_range(r['first_s'], '.2f'):>11} s | {_range(r['first_x_scan'], '.1f'):>10}x | "
            f"{_range(r['nochange_s'], '.3f'):>11} s | "
            f"{_range(r['nochange_x_scan'], '.2f'):>10}x | "
            f"{r['one_changed_s']:>7.3f} s | {r['peak_rss_mb']:>5.1f} MB"
        )
    for r in rows:
        if r["phases"]:
            cells = ", ".join(f"{k} {v:.3f}" for k, v in r["phases"].items())
            print(f"{r['files']:,} files, CPU s per step of a first index: {cells}")
    daemon_rows = [r for r in rows if r["daemon"]]
    if daemon_rows:
        head = (
            f"{'files':>7} | {'memoryd index':>13} | {'daemon to ready':>15} | {'x index':>9} | "
            f"{'index CPU':>11} | {'daemon CPU':>11} | {'x index':>9}"
        )
        print(f"\n{head}\n{'-' * len(head)}")
    for r in daemon_rows:
        d = r["daemon"]
        print(
            f"{r['files']:>7} | {_range(d['cli_s'], '.2f'):>11} s | "
            f"{_range(d['ready_s'], '.2f'):>13} s | {_range(d['ready_x_cli'], '.2f'):>8}x | "
            f"{_range(d['cli_cpu_s'], '.2f'):>9} s | {_range(d['ready_cpu_s'], '.2f'):>9} s | "
            f"{_range(d['cpu_x_cli'], '.2f'):>8}x"
            f"   (loadavg {d['loadavg'][0]:.2f} -> {d['loadavg'][1]:.2f})"
        )
    for r in rows:
        if r["files"] != BUDGET_FILES:
            continue
        ok = r["first_s"][1] <= FIRST_INDEX_BUDGET_S and r["nochange_s"][1] <= NO_CHANGE_BUDGET_S
        print(
            f"{r['files']:,} files: first index <= {FIRST_INDEX_BUDGET_S:g} s and no-change "
            f"resync <= {NO_CHANGE_BUDGET_S:g} s in every run: {'met' if ok else 'MISSED'} "
            f"(loadavg {r['loadavg']:.2f} at the start, {r['loadavg_end']:.2f} at the end)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="10000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--phases", action="store_true", help="time each step of a first index")
    parser.add_argument(
        "--daemon", action="store_true", help="a daemon's first start next to `memoryd index`"
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        rows = [bench(size, Path(tmp), args.repeat, args.phases, args.daemon) for size in sizes]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print_table(rows)


if __name__ == "__main__":
    main()
