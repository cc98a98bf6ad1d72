"""``select`` latency over the socket at 1k and 10k memory files in one directory.

Usage: python bench/select_latency.py [--sizes 1000,10000] [--queries 200]
       [--baseline-queries 10] [--workdir DIR] [--json]

For each size, one memory directory holds every file (bench/_corpus.py with
``per_dir`` = size), a real daemon (bench/_daemon.py) indexes it, and:

* cold: the first ``select`` after the daemon is ready (it builds caches);
* warm: after 5 warm-up queries, ``--queries`` varied queries (1-4 topic words
  in a sentence, some with words no memory uses), each timed at the client
  (request to answer over the Unix socket), p50/p99; the daemon's own
  ``latency_ms`` is reported too;
* baseline, same run, same files: what an agent does today per query — list
  the directory, read and parse every file's header with memoryd's parser,
  build the manifest lines ``- [type] filename (ISO mtime): description`` and
  rank them trivially (query words found in the description). The files are
  in the page cache, so this is the baseline's best case. It is
  query-independent, so ``--baseline-queries`` (bounded also by time) suffice.

Temp dirs and daemons are removed even on failure; only a Unix socket is used.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _corpus import TYPES, WORDS, make_tree
from _daemon import running_daemon

from memoryd.indexer.parse import parse_file
from memoryd.indexer.queries import iso_utc
from memoryd.indexer.scanner import is_memory_filename
from memoryd.select._text import STOPWORDS

SHARED_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "bench" / "coding-memories"

WARMUP = 5
BASELINE_TIME_LIMIT_S = 60.0
TEMPLATES = [
    "how do we handle {0} here?",
    "the {0} {1} broke again after the last {2}, what did we decide",
    "{0} {1}",
    "where is the runbook for {0} and {1} with {2} {3}",
    "fix the flaky {0} test in the {1} module",
    "what's the convention for {0}",
    "user asked about {0} vs {1}, any prior notes?",
    "set up {0} for the new service, remember anything about {1}?",
]
OTHER_WORDS = ["kubernetes", "oauth", "graphql", "nginx", "pandas", "redis", "swift", "unicode"]
_WORD = re.compile(r"[a-z0-9]+")


def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def zipf_vocabulary(size: int = 3000, seed: int = 5) -> list[str]:
    """A vocabulary in frequency-rank order: real words from the development
    corpus when it is present, padded with pronounceable made-up words."""
    counts: dict[str, int] = {}
    if SHARED_CORPUS.is_dir():
        for path in sorted(SHARED_CORPUS.rglob("*.md")):
            for w in _WORD.findall(path.read_text(errors="replace").lower()):
                if len(w) >= 3 and not w.isdigit() and w not in STOPWORDS:
                    counts[w] = counts.get(w, 0) + 1
    words = [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    words += [w for w in WORDS if w not in counts]
    rng = random.Random(seed)
    seen = set(words)
    while len(words) < size:
        w = "".join(rng.choice("bcdfgklmnprstvz") + rng.choice("aeiou") for _ in range(3))
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words[:size]


def make_zipf_tree(directory: Path, count: int, vocab: list[str], seed: int = 7) -> None:
    """``count`` memory files in one folder, words drawn with Zipf (1/rank) frequencies,
    so a word is as common or as rare as it is in real text."""
    rng = random.Random(seed)
    weights = [1.0 / (rank + 1) for rank in range(len(vocab))]
    directory.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        mtype = TYPES[i % 4]
        words = rng.choices(vocab, weights, k=14 + 160 + 3)
        topic, desc, body = words[:3], words[3:17], words[17:]
        paragraphs = "\n\n".join(" ".join(body[j : j + 40]) for j in range(0, 160, 40))
        (directory / f"{mtype}_{'_'.join(topic)}_{i}.md").write_text(
            f"---\nname: {' '.join(topic)}\ndescription: {' '.join(desc)}\ntype: {mtype}\n"
            f"---\n\n{paragraphs}\n",
            encoding="utf-8",
        )


def make_queries(count: int, vocab: list[str] | None = None, seed: int = 11) -> list[str]:
    """Varied prompts: corpus topics, paraphrase-ish fillers, some unknown words."""
    rng = random.Random(seed)
    topic_words = vocab[:1500] if vocab else WORDS
    out = []
    for i in range(count):
        template = TEMPLATES[i % len(TEMPLATES)]
        pool = OTHER_WORDS if i % 10 == 9 else topic_words  # every tenth: nothing should match
        words = [rng.choice(pool) for _ in range(4)]
        if i % 5 == 3:
            words[0] = rng.choice(OTHER_WORDS)
        out.append(template.format(*words))
    return out


def scan_per_query(directory: Path, query: str) -> list[str]:
    """The agent's way: read every header from disk, build the manifest, rank trivially."""
    words = set(_WORD.findall(query.lower()))
    lines: list[tuple[int, str]] = []
    with os.scandir(directory) as it:
        for entry in it:
            if not entry.is_file() or not is_memory_filename(entry.name):
                continue
            st = entry.stat()
            parsed = parse_file(entry.path, entry.name, st.st_size)
            if parsed.error is not None or parsed.kind != "memory":
                continue
            desc = parsed.description or ""
            line = f"- [{parsed.type}] {entry.name} ({iso_utc(st.st_mtime)}): {desc}"
            hits = len(words & set(_WORD.findall(desc.lower())))
            lines.append((hits, line))
    lines.sort(key=lambda t: -t[0])
    return [line for hits, line in lines[:5] if hits]


def baseline(directory: Path, queries: list[str], limit_s: float) -> list[float]:
    times: list[float] = []
    deadline = time.perf_counter() + limit_s
    scan_per_query(directory, queries[0])  # page cache warm: the baseline's best case
    for query in queries:
        if times and time.perf_counter() > deadline:
            break
        started = time.perf_counter()
        scan_per_query(directory, query)
        times.append((time.perf_counter() - started) * 1000)
    return times


def bench_size(
    size: int, workdir: Path, queries: list[str], args: argparse.Namespace, vocab: list[str]
) -> dict[str, Any]:
    root = workdir / f"tree-{size}"
    directory = root / "project-0000" / "memory"
    if args.corpus == "dense":
        make_tree(root, size, per_dir=size)
    else:
        make_zipf_tree(directory, size, vocab)
    assert sum(1 for _ in directory.iterdir()) == size
    out: dict[str, Any] = {"files": size, "corpus": args.corpus, "loadavg": os.getloadavg()[0]}
    base = baseline(directory, queries[: args.baseline_queries], BASELINE_TIME_LIMIT_S)
    out["baseline_n"] = len(base)
    out["baseline_p50_ms"] = pct(base, 50)
    with running_daemon([root]) as daemon:
        out["daemon_ready_s"] = daemon.ready_s
        with daemon.client() as c:
            started = time.perf_counter()
            first = c.select("cold start: deploy rollback after a failed migration", str(directory))
            out["cold_ms"] = (time.perf_counter() - started) * 1000
            out["cold_server_ms"] = first["latency_ms"]
            out["candidates"] = first["candidates"]
            for i in range(WARMUP):
                c.select(f"warm up query {i} about {WORDS[i]} and {WORDS[-i - 1]}", str(directory))
            client_ms, server_ms, empty = [], [], 0
            deadline = time.perf_counter() + args.time_limit
            for query in queries:
                if time.perf_counter() > deadline:
                    break
                started = time.perf_counter()
                res = c.select(query, str(directory))
                client_ms.append((time.perf_counter() - started) * 1000)
                server_ms.append(float(res["latency_ms"]))
                empty += not res["selected"]
        out["rss_mb"] = daemon.memory_mb()
    out.update(
        queries=len(client_ms),
        empty_answers=empty,
        p50_ms=pct(client_ms, 50),
        p99_ms=pct(client_ms, 99),
        max_ms=max(client_ms),
        server_p50_ms=pct(server_ms, 50),
        server_p99_ms=pct(server_ms, 99),
    )
    out["speedup_p50"] = out["baseline_p50_ms"] / out["p50_ms"]
    out["rss_peak_mb"] = out.pop("rss_mb")["VmHWM"]
    return out


def print_table(rows: list[dict[str, Any]]) -> None:
    header = (
        f"{'files':>6} | {'cold 1st':>9} | {'warm p50':>9} | {'warm p99':>9} | "
        f"{'srv p50':>8} | {'srv p99':>8} | {'baseline p50':>12} | {'x faster':>8} | "
        f"{'empty':>7} | {'RSS peak':>8}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['files']:>6} | {r['cold_ms']:>6.1f} ms | {r['p50_ms']:>6.2f} ms | "
            f"{r['p99_ms']:>6.2f} ms | {r['server_p50_ms']:>5.2f} ms | "
            f"{r['server_p99_ms']:>5.2f} ms | {r['baseline_p50_ms']:>9.1f} ms | "
            f"{r['speedup_p50']:>7.0f}x | {r['empty_answers']:>3}/{r['queries']:<3} | "
            f"{r['rss_peak_mb']:>5.1f} MB"
        )
    big = max(rows, key=lambda r: r["files"])
    checks = [
        (f"p50 <= 10 ms at {big['files']:,}", big["p50_ms"] <= 10),
        (f"p99 <= 50 ms at {big['files']:,}", big["p99_ms"] <= 50),
        (f">= 50x faster than scan-per-query at {big['files']:,}", big["speedup_p50"] >= 50),
    ]
    print("targets: " + "; ".join(f"{name}: {'met' if ok else 'MISSED'}" for name, ok in checks))
    print(f"corpus: {rows[0]['corpus']}")
    print(
        "loadavg at start of each size: "
        + ", ".join(f"{r['files']}: {r['loadavg']:.2f}" for r in rows)
        + f"; baseline queries timed: {', '.join(str(r['baseline_n']) for r in rows)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--baseline-queries", type=int, default=10)
    parser.add_argument("--time-limit", type=float, default=120.0, help="per size, seconds")
    parser.add_argument(
        "--corpus",
        choices=("zipf", "dense"),
        default="zipf",
        help="zipf: words at real-text frequencies (default); dense: bench/_corpus.py's "
        "41-word vocabulary, where every query word is in nearly every file (worst case)",
    )
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    vocab = zipf_vocabulary() if args.corpus == "zipf" else WORDS
    queries = make_queries(args.queries, vocab if args.corpus == "zipf" else None)
    workdir = Path(tempfile.mkdtemp(prefix="mdsel-", dir=args.workdir))
    try:
        rows = [bench_size(size, workdir, queries, args, vocab) for size in sizes]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print_table(rows)


if __name__ == "__main__":
    main()
