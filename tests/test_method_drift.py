"""The edges that name params themselves agree with memoryd/methods.py's declarations.

The Python client's helpers with named arguments choose which params they
offer; a declared param one of them does not offer fails. The CLI's flags, the
MCP input schemas and docs/protocol.md's tables are made from the declarations.
"""

from __future__ import annotations

import inspect
import json
import re
import typing
from dataclasses import fields
from pathlib import Path

import pytest

from memoryd import methods
from memoryd.daemon.handlers import DaemonMethods
from memoryd.ipc.client import Client
from memoryd.service import MemoryService
from memoryd.sessions.format import SessionInput

PROTOCOL_MD = Path(__file__).resolve().parent.parent / "docs" / "protocol.md"


# A method without a helper is sent with Client.call; a new method needs none.
HELPERS = sorted(n for n in methods.METHODS if hasattr(Client, n))


def test_the_helpers_readme_names_exist() -> None:
    assert {"select", "save", "load_last", "context", "status", "list", "watch"} <= set(HELPERS)


@pytest.mark.parametrize("name", HELPERS)
def test_client_helpers_take_the_params_and_return_the_reply_type(name: str) -> None:
    method = methods.METHODS[name]
    helper = getattr(Client, name)
    signature = inspect.signature(helper)
    assert signature.return_annotation == method.reply.__name__, name
    takes = signature.parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in takes.values()):
        return  # the params beyond the first pass through as keywords
    assert set(takes) - {"self"} == {p.name for p in method.params}, name


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
