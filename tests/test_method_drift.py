"""The edges that name params themselves agree with memoryd/methods.py's declarations.

The CLI's commands (a flag's dest is the wire name) and the Python client's
helpers with named arguments choose which params they offer; a declared param
one of them does not offer fails, unless a reason below says why it is left
out. The MCP input schemas and docs/protocol.md's tables are generated from
the declarations.
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import typing
from dataclasses import fields
from pathlib import Path

import pytest

from memoryd import methods
from memoryd.cli import build_parser
from memoryd.daemon.handlers import DaemonMethods
from memoryd.ipc.client import Client
from memoryd.service import MemoryService
from memoryd.sessions.format import SessionInput

PROTOCOL_MD = Path(__file__).resolve().parent.parent / "docs" / "protocol.md"

CLI_COMMANDS = {
    "status": "status",
    "list": "list",
    "reindex": "reindex",
    "watch": "watch",
    "unwatch": "unwatch",
    "stop": "shutdown",
    "select": "select",
    "stats": "stats",
    "save": "save",
    "load-last": "load_last",
    "context": "context",
    "report": "report",
    "check": "check",
}
CLI_ONLY = {"json", "db", "socket", "require_daemon", "stdin", "fail_on", "strict"}
"""Flags about the command itself (output, transport, exit status), never sent."""

NOT_ON_CLI = {
    ("select", "allow_secrets"): "a person reads the files themselves; the flag is for programs",
    ("select", "session_id"): "a label for the hook's and MCP's sessions; a shell has none",
    ("select", "timeout_ms"): "the CLI waits for its answer; the hook sets a deadline",
    ("select", "cwd"): "sent by the Claude Code hook, which knows the agent's directory",
    ("load_last", "reveal_secrets"): "a socket/Client param only (docs/limits.md)",
}


def command_parser(command: str) -> argparse.ArgumentParser:
    parser = build_parser(command)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found: argparse.ArgumentParser = sub.choices[command]
    return found


def check_edge(
    method: methods.Method,
    given: set[str],
    missing_ok: dict[tuple[str, str], str],
) -> None:
    names = {p.name for p in method.params}
    assert given <= names, f"{method.name}: not params of the method: {given - names}"
    excused = {param for (name, param) in missing_ok if name == method.name}
    assert names - given == excused, f"{method.name}: left out {names - given}, excused {excused}"


@pytest.mark.parametrize("command", sorted(CLI_COMMANDS))
def test_cli_flags_are_the_methods_params(command: str) -> None:
    method = methods.METHODS[CLI_COMMANDS[command]]
    parser = command_parser(command)
    actions = [a for a in parser._actions if not isinstance(a, argparse._HelpAction)]
    check_edge(method, {a.dest for a in actions} - CLI_ONLY, NOT_ON_CLI)
    for action in actions:  # a flag's default is the wire's, or none (the daemon's applies)
        if action.dest not in CLI_ONLY and action.default not in (None, []):
            assert action.default == {p.name: p.default for p in method.params}[action.dest], (
                action.dest
            )


@pytest.mark.parametrize("name", sorted(methods.METHODS))
def test_client_helpers_take_the_params_and_return_the_reply_type(name: str) -> None:
    method = methods.METHODS[name]
    helper = getattr(Client, name, None)
    if helper is None:
        pytest.skip("no helper: Client.call sends it")  # a new method needs none
    signature = inspect.signature(helper)
    assert signature.return_annotation == method.reply.__name__, name
    takes = signature.parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in takes.values()):
        return  # the params beyond the first pass through as keywords
    check_edge(method, set(takes) - {"self"}, {})


def test_the_checked_session_has_every_field_a_save_sends() -> None:
    sent = {p.name for p in methods.METHODS["save"].params} - {"dir", "replace"}
    assert {f.name for f in fields(SessionInput)} == sent


def test_one_method_table_answers_every_method_once() -> None:
    daemon_side = {n for n in methods.METHODS if methods.handler(DaemonMethods, n) is not None}
    service_side = {n for n in methods.METHODS if methods.handler(MemoryService, n) is not None}
    # The daemon answers what the service does not, and select to take the hook's cwd off.
    assert service_side and daemon_side == (set(methods.METHODS) - service_side) | {"select"}
    entries = {
        n[4:] for owner in (DaemonMethods, MemoryService) for n in dir(owner) if n[:4] == "cmd_"
    }
    assert entries == set(methods.METHODS)


def protocol_sections() -> dict[str, str]:
    text = PROTOCOL_MD.read_text(encoding="utf-8")
    parts = re.split(r"^## (\S+)\n", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_protocol_md_shows_every_method_with_an_example() -> None:
    sections = protocol_sections()
    for name in methods.METHODS:
        assert name in sections, f"docs/protocol.md has no section for {name}"
        assert f'"method":"{name}"' in sections[name], f"{name}: no request example"


@pytest.mark.parametrize("name", sorted(methods.METHODS))
def test_protocol_md_replies_have_the_reply_types_keys(name: str) -> None:
    """Every key an example answer shows is in the reply type; a full example shows all
    the keys the type always has (a shortened one, with `, …`, may leave some out)."""
    reply = methods.METHODS[name].reply
    hints = typing.get_type_hints(reply, include_extras=True)
    always = {k for k, v in hints.items() if typing.get_origin(v) is not typing.NotRequired}
    blocks = re.findall(r"```json\n(.*?)\n```", protocol_sections()[name], re.DOTALL)
    answers = [b for b in blocks if '"result"' in b]
    assert answers, f"{name}: no example answer"
    for block in answers:
        shown = set(json.loads(block.replace(", …", ""))["result"])
        assert shown <= set(hints), (name, shown - set(hints))
        if ", …" not in block:
            assert always <= shown, (name, always - shown)


def test_protocol_md_capabilities_example_is_what_status_announces() -> None:
    example = next(
        line for line in protocol_sections()["status"].splitlines() if '"capabilities"' in line
    )
    shown = json.loads(example)["result"]["capabilities"]
    assert shown == methods.capabilities()
