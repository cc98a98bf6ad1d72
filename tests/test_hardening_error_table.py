"""docs/protocol.md's table of error codes matches the wire: the codes of memoryd/errors.py,
in order, and for each, every ``data`` key some raise of it sends."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from memoryd import errors

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("memoryd", "daemon", "ipc", "indexer")
MOVED = {"id"}
"""Data keys the server takes out of ``data`` into the reply's ``id`` (ipc/server.py)."""


def table() -> dict[str, str]:
    """Code -> its row's meaning, in the order of docs/protocol.md."""
    text = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    start = text.index("| code | meaning |")
    rows = text[start:].split("\n\n", 1)[0].splitlines()[2:]
    return {
        m.group(1): m.group(2) for m in (re.match(r"\| `(\w+)` \| (.*) \|$", r) for r in rows) if m
    }


def data_keys_sent() -> dict[str, set[str]]:
    """Code -> the keys of the literal ``data`` dicts its exception is raised with."""
    classes = {cls.__name__: cls.code for cls in errors._BY_CODE.values()}
    sent: dict[str, set[str]] = {code: set() for code in classes.values()}
    for base in SOURCES:
        for path in (ROOT / base).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.Call):
                    continue
                func = node.func
                name = getattr(func, "id", None) or getattr(func, "attr", None)
                if name not in classes:
                    continue
                data = node.args[1] if len(node.args) > 1 else None
                data = data or next((k.value for k in node.keywords if k.arg == "data"), None)
                if data is None or (isinstance(data, ast.Constant) and data.value is None):
                    continue
                assert isinstance(data, ast.Dict), f"{path}:{node.lineno}: data is not a literal"
                for key in data.keys:
                    assert isinstance(key, ast.Constant), f"{path}:{node.lineno}"
                    sent[classes[name]].add(str(key.value))
    return sent


def test_the_table_lists_every_code_in_order() -> None:
    assert list(table()) == list(errors._BY_CODE)


def test_each_row_names_every_data_key_its_code_sends() -> None:
    rows = table()
    missing = {
        code: sorted(k for k in keys - MOVED if f"`data.{k}`" not in rows[code])
        for code, keys in data_keys_sent().items()
    }
    assert {code: keys for code, keys in missing.items() if keys} == {}
    named = {code: set(re.findall(r"`data\.(\w+)`", meaning)) for code, meaning in rows.items()}
    sent = data_keys_sent()
    assert {code: keys - sent[code] for code, keys in named.items() if keys - sent[code]} == {}
