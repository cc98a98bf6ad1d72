"""Daemon speed: change-to-visible latency, round trip, concurrent clients, RSS.

Usage: python bench/daemon_bench.py [--files 10000] [--edits 200] [--calls 1000]
       [--clients 16] [--requests 500] [--workdir DIR] [--json]

Runs a real ``memoryd serve`` subprocess (bench/_daemon.py) over a synthetic
tree of ``--files`` memories (bench/_corpus.py) plus a small edit folder, and
measures, in this order:

* RSS (VmRSS, VmHWM from /proc) once the tree is indexed and the daemon ready;
* change-to-visible: write a memory file (alternately a new file and an edit
  of an existing file's description), then poll ``list`` on its folder every
  ``--poll-ms`` until the change shows; baseline: the bare watchdog (inotify)
  event latency on the same machine, measured in this run, plus the daemon's
  configured settle time (50 ms), which together are the floor by design;
* ``status`` round trip on one connection; baseline: a bare threaded Python
  Unix-socket server that decodes each JSON line and answers it, in its own
  process, called with the same client;
* ``--clients`` processes each sending ``--requests`` ``status`` calls on
  their own connection at once: requests/s and errors, against the same bare
  server;
* RSS again at the end (VmHWM is the peak over the whole run).

Every loop is bounded in count and time; temp dirs and the daemon are removed
even on failure. Only Unix sockets are used.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import socketserver
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _corpus import make_tree
from _daemon import running_daemon

from memoryd.ipc.client import Client

SETTLE_MS = 50.0  # the daemon's default settle_ms (memoryd/config.py)
EDIT_TIMEOUT_S = 5.0
SEEDS = 10


def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def memory_text(name: str, description: str, mtype: str = "feedback") -> str:
    return (
        f"---\nname: {name}\ndescription: {json.dumps(description)}\ntype: {mtype}\n---\n\n"
        f"Body of {name}: retry the deploy after the migration finishes.\n"
    )


# -- change-to-visible ------------------------------------------------------------


def change_to_visible(
    client: Client, folder: Path, edits: int, poll_s: float
) -> tuple[list[float], int]:
    """Latencies (ms) from write to visible in ``list``; and the edits never seen."""
    latencies: list[float] = []
    missed = 0
    directory = str(folder)
    for i in range(edits):
        marker = f"marker{i:05d}x"
        if i % 2 == 0:
            path = folder / f"feedback_new_edit_{i:05d}.md"
        else:
            path = folder / f"feedback_seed_{i % SEEDS:02d}.md"
        text = memory_text(path.stem, f"edit {marker} of the deploy notes")
        started = time.perf_counter()
        path.write_text(text, encoding="utf-8")
        deadline = started + EDIT_TIMEOUT_S
        seen = False
        while time.perf_counter() < deadline:
            files = client.list(directory)["files"]
            if any(marker in (f.get("description") or "") for f in files):
                seen = True
                break
            time.sleep(poll_s)
        if seen:
            latencies.append((time.perf_counter() - started) * 1000)
        else:
            missed += 1
    return latencies, missed


def watchdog_event_latency(workdir: Path, writes: int) -> list[float]:
    """Bare watchdog/inotify: ms from a file write to its first event, in-process."""
    from watchdog.events import FileSystemEvent, FileSystemEventHandler  # noqa: PLC0415
    from watchdog.observers import Observer  # noqa: PLC0415

    folder = workdir / "watchdog-baseline"
    folder.mkdir()
    seen: dict[str, float] = {}
    cond = threading.Condition()

    class Handler(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            now = time.perf_counter()
            path = os.fsdecode(event.src_path)
            with cond:
                seen.setdefault(path, now)
                cond.notify_all()

    observer: Any = Observer()
    observer.schedule(Handler(), str(folder), recursive=True)
    observer.start()
    latencies = []
    try:
        for i in range(writes):
            path = str(folder / f"file_{i}.md")
            started = time.perf_counter()
            Path(path).write_text(memory_text(f"file {i}", "baseline"), encoding="utf-8")
            with cond:
                cond.wait_for(lambda p=path: p in seen, timeout=EDIT_TIMEOUT_S)  # type: ignore[misc]
                if path in seen:
                    latencies.append((seen[path] - started) * 1000)
    finally:
        observer.stop()
        observer.join(timeout=5)
    return latencies


# -- round trip and concurrency -----------------------------------------------------


def round_trip(client: Client, calls: int, method: str) -> list[float]:
    latencies = []
    for _ in range(calls):
        started = time.perf_counter()
        client.call(method)
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies


class _EchoHandler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        for line in self.rfile:
            req = json.loads(line)
            reply = {"id": req.get("id"), "result": {"state": "ready", "pid": os.getpid()}}
            self.wfile.write(json.dumps(reply, separators=(",", ":")).encode() + b"\n")


class _EchoServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def echo_server(path: str) -> None:
    """The baseline server: one thread per connection, decode JSON, answer."""
    with _EchoServer(path, _EchoHandler) as server:
        server.serve_forever(poll_interval=0.2)


def client_worker(
    sock: str,
    requests: int,
    method: str,
    barrier: Any,
    results: Any,
    time_limit: float,
) -> None:
    """One concurrent client process: connect, wait for all, send ``requests`` calls."""
    ok = errors = 0
    first_error = ""
    client = Client(sock, timeout=30)
    try:
        client.connect()
    except Exception as exc:
        first_error = repr(exc)
    barrier.wait(timeout=60)
    started = time.monotonic()
    deadline = started + time_limit
    for _ in range(requests):
        if time.monotonic() > deadline:
            errors += 1
            first_error = first_error or "time limit"
            break
        try:
            client.call(method)
            ok += 1
        except Exception as exc:
            errors += 1
            first_error = first_error or repr(exc)
    ended = time.monotonic()
    client.close()
    results.put({"ok": ok, "errors": errors, "start": started, "end": ended, "err": first_error})


def concurrent_load(
    sock: str, clients: int, requests: int, method: str = "status", time_limit: float = 120.0
) -> dict[str, Any]:
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(clients)
    results = ctx.Queue()
    procs = [
        ctx.Process(
            target=client_worker, args=(sock, requests, method, barrier, results, time_limit)
        )
        for _ in range(clients)
    ]
    for proc in procs:
        proc.start()
    outs = []
    try:
        for _ in procs:
            outs.append(results.get(timeout=time_limit + 90))
    finally:
        for proc in procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()
                proc.join()
    wall = max(o["end"] for o in outs) - min(o["start"] for o in outs)
    ok = sum(o["ok"] for o in outs)
    errors = clients * requests - ok  # failed calls plus calls never sent
    return {
        "requests": clients * requests,
        "ok": ok,
        "errors": errors,
        "seconds": wall,
        "req_per_s": ok / wall if wall > 0 else 0.0,
        "first_error": next((o["err"] for o in outs if o["err"]), ""),
    }


def with_echo_server(workdir: Path, calls: int, clients: int, requests: int) -> dict[str, Any]:
    """Round trip and concurrent load against the bare server, in its own process."""
    sock = str(workdir / "echo.sock")
    server = mp.get_context("fork").Process(target=echo_server, args=(sock,), daemon=True)
    server.start()
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(sock):
            if time.monotonic() > deadline:
                raise RuntimeError("echo server did not start")
            time.sleep(0.01)
        with Client(sock, timeout=10) as c:
            for _ in range(50):
                c.call("status")
            rt = round_trip(c, calls, "status")
        load = concurrent_load(sock, clients, requests)
    finally:
        server.kill()
        server.join(timeout=5)
    return {"rt": rt, "load": load}


# -- the run ----------------------------------------------------------------------


def bench(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    root = workdir / "memories"
    make_tree(root / "corpus", args.files)
    edit_dir = root / "edits" / "memory"
    edit_dir.mkdir(parents=True)
    for i in range(SEEDS):
        (edit_dir / f"feedback_seed_{i:02d}.md").write_text(
            memory_text(f"seed {i}", f"seed memory {i} about deploys"), encoding="utf-8"
        )
    out: dict[str, Any] = {"files": args.files + SEEDS, "load_before": os.getloadavg()}

    out["watchdog_ms"] = watchdog_event_latency(workdir, min(args.edits, 100))
    baseline = with_echo_server(workdir, args.calls, args.clients, args.requests)

    with running_daemon([root]) as daemon:
        out["ready_s"] = daemon.ready_s
        with daemon.client() as c:
            indexed = sum(r["files"] for r in c.status()["roots"])
        out["indexed"] = indexed
        out["rss_ready"] = daemon.memory_mb()
        with daemon.client() as c:
            for _ in range(50):  # warm the connection's thread and reader
                c.status()
            out["status_ms"] = round_trip(c, args.calls, "status")
            latencies, missed = change_to_visible(c, edit_dir, args.edits, args.poll_ms / 1000)
        out["visible_ms"], out["visible_missed"] = latencies, missed
        out["load"] = concurrent_load(str(daemon.socket), args.clients, args.requests)
        out["rss_end"] = daemon.memory_mb()
    out["echo_ms"] = baseline["rt"]
    out["echo_load"] = baseline["load"]
    out["load_after"] = os.getloadavg()
    return out


def summarize(raw: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    vis, wd = raw["visible_ms"], raw["watchdog_ms"]
    st, echo = raw["status_ms"], raw["echo_ms"]
    load, eload = raw["load"], raw["echo_load"]
    return {
        "files_indexed": raw["indexed"],
        "daemon_ready_s": raw["ready_s"],
        "visible_p50_ms": pct(vis, 50),
        "visible_p99_ms": pct(vis, 99),
        "visible_max_ms": max(vis, default=float("nan")),
        "visible_edits": len(vis),
        "visible_missed": raw["visible_missed"],
        "watchdog_p50_ms": pct(wd, 50),
        "watchdog_p99_ms": pct(wd, 99),
        "floor_p50_ms": pct(wd, 50) + SETTLE_MS,
        "status_p50_ms": pct(st, 50),
        "status_p99_ms": pct(st, 99),
        "echo_p50_ms": pct(echo, 50),
        "echo_p99_ms": pct(echo, 99),
        "clients": args.clients,
        "requests": load["requests"],
        "req_per_s": load["req_per_s"],
        "errors": load["errors"],
        "first_error": load["first_error"],
        "echo_req_per_s": eload["req_per_s"],
        "echo_errors": eload["errors"],
        "rss_ready_mb": raw["rss_ready"]["VmRSS"],
        "rss_end_mb": raw["rss_end"]["VmRSS"],
        "rss_peak_mb": raw["rss_end"]["VmHWM"],
        "loadavg_before": list(raw["load_before"]),
        "loadavg_after": list(raw["load_after"]),
    }


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def print_table(s: dict[str, Any]) -> None:
    rows = [
        (
            "change-to-visible p50",
            f"{s['visible_p50_ms']:.1f} ms",
            f"{s['floor_p50_ms']:.1f} ms (inotify {s['watchdog_p50_ms']:.1f} + settle 50)",
            "<= 100 ms",
            verdict(s["visible_p50_ms"] <= 100 and s["visible_missed"] == 0),
        ),
        (
            "change-to-visible p99",
            f"{s['visible_p99_ms']:.1f} ms",
            f"inotify p99 {s['watchdog_p99_ms']:.1f} ms",
            "<= 250 ms",
            verdict(s["visible_p99_ms"] <= 250 and s["visible_missed"] == 0),
        ),
        (
            "status round trip p50",
            f"{s['status_p50_ms']:.3f} ms",
            f"{s['echo_p50_ms']:.3f} ms (bare server)",
            "<= 2 ms",
            verdict(s["status_p50_ms"] <= 2),
        ),
        (
            "status round trip p99",
            f"{s['status_p99_ms']:.3f} ms",
            f"{s['echo_p99_ms']:.3f} ms (bare server)",
            "-",
            "-",
        ),
        (
            f"{s['clients']} clients x {s['requests'] // s['clients']} status",
            f"{s['req_per_s']:,.0f} req/s, {s['errors']} err",
            f"{s['echo_req_per_s']:,.0f} req/s, {s['echo_errors']} err",
            ">= 2,000 req/s, 0 err",
            verdict(s["req_per_s"] >= 2000 and s["errors"] == 0),
        ),
        (
            "RSS ready / end / peak",
            f"{s['rss_ready_mb']:.1f} / {s['rss_end_mb']:.1f} / {s['rss_peak_mb']:.1f} MB",
            "-",
            "<= 100 MB",  # issue 22's budget for 10k memories
            verdict(max(s["rss_end_mb"], s["rss_peak_mb"]) <= 100),
        ),
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    head = ("measure", "memoryd", "baseline (same run)", "target", "verdict")
    widths = [max(w, len(h)) for w, h in zip(widths, head, strict=True)]
    line = " | ".join(h.ljust(w) for h, w in zip(head, widths, strict=True))
    print(
        f"{s['files_indexed']:,} files indexed; daemon ready in {s['daemon_ready_s']:.1f} s; "
        f"{s['visible_edits']} edits seen, {s['visible_missed']} missed; "
        f"loadavg before {s['loadavg_before'][0]:.2f}, after {s['loadavg_after'][0]:.2f}"
    )
    print(line)
    print("-" * len(line))
    for r in rows:
        print(" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))
    if s["first_error"]:
        print(f"first client error: {s['first_error']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--edits", type=int, default=200)
    parser.add_argument("--poll-ms", type=float, default=2.0)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    # Short paths: the echo server's socket lives in the workdir (AF_UNIX <= 107 bytes).
    workdir = Path(tempfile.mkdtemp(prefix="mdbench-", dir=args.workdir or "/tmp"))
    try:
        summary = summarize(bench(args, workdir), args)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print_table(summary)


if __name__ == "__main__":
    main()
