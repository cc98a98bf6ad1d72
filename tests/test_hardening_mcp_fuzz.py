"""``memoryd mcp`` under thousands of malformed messages: one answer per request, and it stays up.

A real ``memoryd mcp`` subprocess on stdio, no daemon running (every tool call
that passes its argument checks is answered "not running"). The messages come
from a seeded generator: broken and deeply nested JSON, ids of every type
(lone surrogates too), wrong ``jsonrpc``/``method``/``params``, and tool calls
whose arguments mix right and wrong types, out-of-range numbers, NULs and
lone surrogates. Every request with a valid id carries a unique one, so the
answers can be matched exactly.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from daemon_fixtures import daemon_env

from memoryd.errors import InvalidParams
from memoryd.integrations.mcp_server import valid_text
from memoryd.integrations.mcp_tools import BY_NAME, check_arguments

CASES = 3000
CODES = {-32700, -32600, -32601, -32602}
METHODS = ["tools/call"] * 6 + ["ping", "tools/list", "initialize", "nope", "", "tools/cal"]
TOOLS = [*BY_NAME, "rm_rf", ""]

NASTY: list[Any] = [
    -1,
    0,
    7,
    10**30,
    1.5,
    True,
    None,
    "",
    "x",
    "/tmp",
    "a\x00b",
    "\ud800",
    "\udfff tail",
    "2025-02-30-25-61",
    "UPPER",
    ["x"],
    [1, 2],
    ["\x00"],
    [["deep"]],
    {},
    {"S1": "done"},
    {"S1": 5},
    {"CP": {"option": "B", "regenerated_count": -1}},
]


def nested(depth: int) -> Any:
    value: Any = "x"
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


def arguments(rng: random.Random, tool: str) -> Any:
    if rng.random() < 0.05:
        return rng.choice([[], "args", 5, None, nested(rng.randint(5, 400))])
    known = list(BY_NAME[tool]["inputSchema"]["properties"]) if tool in BY_NAME else []
    names = [*known, "bogus"]
    args: dict[str, Any] = {}
    for name in rng.sample(names, rng.randint(0, len(names))):
        args[name] = rng.choice(NASTY) if rng.random() < 0.6 else "fine words"
    if rng.random() < 0.05:
        args["query"] = nested(rng.randint(5, 400))
    return args


def message(rng: random.Random, msg_id: Any) -> dict[str, Any]:
    method = rng.choice(METHODS)
    msg: dict[str, Any] = {
        "jsonrpc": "2.0" if rng.random() < 0.9 else rng.choice(["1.0", 2]),
        "method": method,
    }
    if rng.random() < 0.05:
        msg["method"] = rng.choice([None, 5, ["tools/call"], "\ud800"])
    if msg_id is not _ABSENT:
        msg["id"] = msg_id
    if method == "tools/call":
        tool = rng.choice(TOOLS)
        params: Any = {"name": tool, "arguments": arguments(rng, tool)}
        if rng.random() < 0.05:
            params = rng.choice(["x", [1], 3, {"name": ["memory_status"]}])
        msg["params"] = params
    elif rng.random() < 0.3:
        msg["params"] = rng.choice([{}, [], "p", {"protocolVersion": "\ud800"}, None])
    return msg


_ABSENT = object()


def encoded(msg: Any) -> bytes:
    return json.dumps(msg).encode()  # ASCII escapes: lone surrogates travel as \\ud800


def garbage(rng: random.Random) -> bytes:
    return rng.choice(
        [
            b"[" * 50_000 + b"]" * 50_000,
            b'{"a":' * 20_000 + b"1" + b"}" * 20_000,
            b"{not json",
            b"\xff\xfe\x00garbage",
            b'{"jsonrpc":"2.0","id":NaN,"method":"ping"}',
            b'{"jsonrpc":"2.0","id":1' + b"9" * 5000 + b',"method":"ping"}',
            b'"just a string"',
            b"[]",
            b"null",
            b'{"jsonrpc":"2.0","id":"huge","method":"ping","pad":"' + b"x" * 3_000_000 + b'"}',
        ]
    )


def test_every_request_gets_one_answer_and_the_server_stays_up(tmp_path: Path) -> None:
    rng = random.Random(20261206)
    lines: list[bytes] = []
    expected: dict[str, bool] = {}  # id -> answered as a tool error (vs a protocol answer)
    for n in range(CASES):
        roll = rng.random()
        if roll < 0.08:
            lines.append(garbage(rng))
            continue
        if roll < 0.15:  # an id JSON-RPC does not allow: answered with id null
            bad_id = rng.choice([True, 1.5, [1], {"i": 1}, "\ud800x"])
            lines.append(encoded(message(rng, bad_id)))
            continue
        if roll < 0.20:  # a notification: no answer
            lines.append(encoded(message(rng, _ABSENT)))
            continue
        msg_id = f"r{n}"
        msg = message(rng, msg_id)
        lines.append(encoded(msg))
        expected[msg_id] = _is_bad_tool_call(msg)
    lines.append(encoded({"jsonrpc": "2.0", "id": "last", "method": "ping"}))

    home = tmp_path / "home"
    home.mkdir()
    env = {**daemon_env(home), "MEMORYD_SOCKET": str(tmp_path / "no-daemon.sock")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "memoryd", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None

    def feed() -> None:
        assert proc.stdin is not None
        for line in lines:
            proc.stdin.write(line + b"\n")
        proc.stdin.flush()

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    answers: dict[object, list[dict[str, Any]]] = {}
    try:
        while "last" not in answers:
            raw = proc.stdout.readline()
            assert raw, f"memoryd mcp died: {proc.wait(10)} {proc.stderr.read()[-3000:]!r}"
            reply = json.loads(raw)
            assert reply["jsonrpc"] == "2.0" and ("result" in reply) != ("error" in reply), reply
            if "error" in reply:
                assert reply["error"]["code"] in CODES, reply
            answers.setdefault(reply["id"], []).append(reply)
        writer.join(timeout=30)
        assert proc.poll() is None, "the server must still be running"
    finally:
        proc.stdin.close()
        code = proc.wait(timeout=30)
    assert code == 0 and proc.stderr.read() == b""

    for msg_id, bad_tool_call in expected.items():
        got = answers.get(msg_id, [])
        assert len(got) == 1, (msg_id, got)
        result = got[0].get("result")
        if bad_tool_call:
            assert result is not None and result["isError"] is True, got[0]
            assert result["content"][0]["text"], got[0]
    assert set(answers) - set(expected) <= {None, "last"}
    # The mix covered both kinds of answer.
    assert any(r[0].get("result", {}).get("isError") for r in answers.values() if r)
    assert sum(1 for r in answers.get(None, [])) > 100


def _is_bad_tool_call(msg: dict[str, Any]) -> bool:
    """A well-formed ``tools/call`` of a known tool whose arguments its schema refuses."""
    params = msg.get("params")
    if msg.get("jsonrpc") != "2.0" or msg.get("method") != "tools/call":
        return False
    if not isinstance(params, dict) or not isinstance(params.get("name"), str):
        return False
    if params["name"] not in BY_NAME:
        return False
    args = params.get("arguments") or {}
    if not isinstance(args, dict) or not valid_text(json.dumps(args, ensure_ascii=False)):
        return True
    try:
        check_arguments(params["name"], args)
    except InvalidParams:
        return True
    return False


def test_the_reported_killers_are_answered(tmp_path: Path) -> None:
    """The four messages that ended the server, each answered as the MCP spec says."""
    calls = [
        ("memory_select", {"query": "x", "session_id": ["x"]}, "'session_id' must be a string"),
        ("memory_context", {"task": "x", "more_dirs": -1}, "'more_dirs' must be a list"),
        ("memory_select", {"query": "x", "dir": "/a\x00b"}, "daemon is not running"),
        ("memory_select", {"query": "x", "limit": 9}, "'limit' must be an integer from 1 to 5"),
    ]
    lines = [b"[" * 100_000, encoded({"jsonrpc": "2.0", "id": "\ud800", "method": "ping"})]
    lines.append(b'{"jsonrpc":"2.0","id":9,"method":"ping","pad":"' + b"x" * 3_000_000 + b'"}')
    for n, (tool, args, _text) in enumerate(calls):
        params = {"name": tool, "arguments": args}
        lines.append(encoded({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}))
    home = tmp_path / "home"
    home.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "memoryd", "mcp"],
        input=b"\n".join(lines) + b"\n",
        env={**daemon_env(home), "MEMORYD_SOCKET": str(tmp_path / "none.sock")},
        capture_output=True,
        timeout=30,
    )
    assert proc.returncode == 0 and proc.stderr == b""
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r.get("error", {}).get("code") for r in replies[:3]] == [-32700, -32600, -32600]
    assert [r["id"] for r in replies[:3]] == [None, None, None]
    assert "longer than" in replies[2]["error"]["message"]
    for reply, (_tool, _args, text) in zip(replies[3:], calls, strict=True):
        assert reply["result"]["isError"] is True
        assert text in reply["result"]["content"][0]["text"], reply
