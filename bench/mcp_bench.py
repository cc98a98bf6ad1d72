"""``memoryd mcp``: how soon it answers ``initialize``, and what a tool call adds to the socket.

Usage: python bench/mcp_bench.py [--starts 10] [--calls 200] [--json]

Claude Code starts MCP servers without waiting for them, so a server that is
slow to answer ``initialize`` misses the first prompt (target: < 1 s here).
This bench starts a real daemon over a copy of ``examples/memory`` and
measures, in the same run:

* **start**: ``memoryd mcp`` spawned until its ``initialize`` answer is read,
  ``--starts`` times, round-robin with ``python -c pass`` (the floor) and
  with ``python -c "import mcp.server.lowlevel"`` (what the official SDK's
  low-level server costs to import before it could answer anything);
* **per call**: ``memory_status`` and ``memory_select`` through one server
  session, from a plain JSON-RPC client over its pipes and from the official
  SDK's ``ClientSession`` (which adds its own validation), next to the same
  ``status`` and ``select`` sent straight to the socket (target: the server
  adds < 3 ms to the socket's time).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _daemon import daemon_env, running_daemon

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "memory"
QUERY = "how do I run the tests in parallel?"
INIT: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    },
}


def time_start(argv: list[str], env: dict[str, str]) -> float:
    """ms from spawn to the ``initialize`` answer (or to exit, for the floors)."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    assert proc.stdin is not None and proc.stdout is not None
    if argv[-1] == "mcp":
        proc.stdin.write(json.dumps(INIT).encode() + b"\n")
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())
        elapsed = time.perf_counter() - started
        assert reply["result"]["serverInfo"]["name"] == "memoryd", reply
        proc.stdin.close()
        proc.wait(timeout=30)
    else:
        proc.stdin.close()
        proc.wait(timeout=60)
        elapsed = time.perf_counter() - started
    return elapsed * 1000


class PipeClient:
    """A bare JSON-RPC client on ``memoryd mcp``'s stdin/stdout."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memoryd", "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.ids = 0
        self.request(INIT["method"], INIT["params"])
        self.notify("notifications/initialized")

    def notify(self, method: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.ids += 1
        message = {"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline())
        assert "result" in reply and not reply["result"].get("isError"), reply
        return reply["result"]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def timed(calls: int, fn: Callable[[], Any]) -> list[float]:
    fn()  # warm
    out = []
    for _ in range(calls):
        started = time.perf_counter()
        fn()
        out.append((time.perf_counter() - started) * 1000)
    return out


async def sdk_times(env: dict[str, str], calls: int, root: str) -> dict[str, list[float]]:
    from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: PLC0415

    params = StdioServerParameters(command=sys.executable, args=["-m", "memoryd", "mcp"], env=env)
    out: dict[str, list[float]] = {"status": [], "select": []}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()  # the SDK validates outputs against the listed schemas
        for name, tool, args in (
            ("status", "memory_status", {}),
            ("select", "memory_select", {"query": QUERY, "dir": root}),
        ):
            await session.call_tool(tool, args)
            for _ in range(calls):
                started = time.perf_counter()
                result = await session.call_tool(tool, args)
                out[name].append((time.perf_counter() - started) * 1000)
                assert not result.is_error
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--starts", type=int, default=10)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="memoryd-mcp-bench-"))
    try:
        root = work / "memory"
        shutil.copytree(EXAMPLES, root)
        with running_daemon([root]) as d:
            env = {**daemon_env(d.home, "WARNING"), "MEMORYD_SOCKET": str(d.socket)}
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            py = sys.executable
            starts = {
                "python -c pass": [py, "-c", "pass"],
                "import mcp.server.lowlevel": [py, "-c", "import mcp.server.lowlevel"],
                "memoryd mcp: initialize answered": [py, "-m", "memoryd", "mcp"],
            }
            start_ms: dict[str, list[float]] = {name: [] for name in starts}
            for argv in starts.values():
                time_start(argv, env)  # warm the page cache and .pyc files
            for _ in range(args.starts):
                for name, argv in starts.items():
                    start_ms[name].append(time_start(argv, env))

            params = {"query": QUERY, "dir": str(root)}
            with d.client() as sock:
                socket_ms = {
                    "status": timed(args.calls, sock.status),
                    "select": timed(args.calls, lambda: sock.call("select", params)),
                }
            pipe = PipeClient(env)
            try:
                pipe_ms = {
                    "status": timed(
                        args.calls,
                        lambda: pipe.request("tools/call", {"name": "memory_status"}),
                    ),
                    "select": timed(
                        args.calls,
                        lambda: pipe.request(
                            "tools/call", {"name": "memory_select", "arguments": params}
                        ),
                    ),
                }
            finally:
                pipe.close()
            sdk_ms = asyncio.run(sdk_times(env, args.calls, str(root)))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    med = statistics.median
    loadavg = Path("/proc/loadavg").read_text().split()[:3]
    starts_out = {
        n: {"median_ms": round(med(v), 1), "max_ms": round(max(v), 1)} for n, v in start_ms.items()
    }
    calls_out = {
        kind: {
            "socket_ms": round(med(socket_ms[kind]), 2),
            "mcp_pipe_ms": round(med(pipe_ms[kind]), 2),
            "mcp_sdk_client_ms": round(med(sdk_ms[kind]), 2),
            "added_by_server_ms": round(med(pipe_ms[kind]) - med(socket_ms[kind]), 2),
        }
        for kind in ("status", "select")
    }
    init = starts_out["memoryd mcp: initialize answered"]
    worst_added = max(c["added_by_server_ms"] for c in calls_out.values())
    verdicts = {
        "initialize < 1 s (every start)": init["max_ms"] < 1000,
        "added per call < 3 ms (median)": worst_added < 3.0,
    }
    if args.json:
        print(
            json.dumps(
                {"starts": starts_out, "calls": calls_out, "targets": verdicts, "loadavg": loadavg}
            )
        )
        return 0
    print(f"{args.starts} starts, {args.calls} calls each; load average {' '.join(loadavg)}")
    print(f"{'start':<36} {'median ms':>9} {'max ms':>8}")
    for name, row in starts_out.items():
        print(f"{name:<36} {row['median_ms']:>9} {row['max_ms']:>8}")
    print(f"{'call (median ms)':<16} {'socket':>8} {'mcp pipe':>9} {'mcp sdk':>8} {'added':>7}")
    for kind, row in calls_out.items():
        print(
            f"{kind:<16} {row['socket_ms']:>8} {row['mcp_pipe_ms']:>9} "
            f"{row['mcp_sdk_client_ms']:>8} {row['added_by_server_ms']:>7}"
        )
    print("targets: " + "; ".join(f"{k}: {'met' if v else 'MISSED'}" for k, v in verdicts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
