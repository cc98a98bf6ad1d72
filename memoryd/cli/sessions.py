"""``memoryd save``, ``memoryd load-last`` and ``memoryd context``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from memoryd.cli.common import asks_daemon, note, print_json, show
from memoryd.cli.connect import ask
from memoryd.cli.flags import add_params, wire_params
from memoryd.errors import ConfigError

if TYPE_CHECKING:
    from memoryd.replies import Kept, SaveResult


def step_entry(value: str) -> tuple[str, str]:
    """``--step S0=TEXT``: a step id and its text (the flag's entries become one mapping)."""
    step, _, text = value.partition("=")
    return step, text


def json_object(value: str) -> dict[str, object]:
    """A flag's value read as a JSON object (``--checkpoint-decisions``)."""
    try:
        found = json.loads(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON: {exc}") from None
    if not isinstance(found, dict):
        raise argparse.ArgumentTypeError("must be a JSON object")
    return found


def project_slug(value: str) -> str:
    """``--project``: a name that is a slug once lowercased is lowercased, with a note."""
    if value == value.lower():
        return value
    from memoryd.sessions.format import project_case_note  # noqa: PLC0415 - keep start-up light

    message = project_case_note(value)
    if message is None:
        return value  # not a slug even lowercased: the invalid_params check explains why
    note(message)
    return value.lower()


def register(sub: Any) -> None:
    s = sub.add_parser(
        "save",
        help="write a session memory (flags, or a JSON/YAML document on stdin with --stdin)",
        description="Write the session memory DIR/<session>-<project>.md. A second save of "
        "the same session (the same minute, or the same --session) updates that file and keeps "
        "what the earlier save recorded and this one does not restate: its steps, key "
        "decisions, approved checkpoints, and its summary or active state when this save has "
        "none. --replace writes this save alone instead.",
    )
    add_params(
        s,
        "save",
        dir={"required": True},
        project={"type": project_slug},
        checkpoints_approved={
            "flag": "--checkpoint",
            "metavar": "CP",
            "help": "an approved checkpoint (repeatable)",
        },
        checkpoint_decisions={
            "type": json_object,
            "metavar": "JSON",
            "help": "what the user chose at each checkpoint, as a JSON object: "
            '\'{"CP-S1": {"option": "B", "note": "..."}}\'',
        },
        session_summary={"flag": "--summary"},
        steps_completed={
            "flag": "--step",
            "action": "append",
            "type": step_entry,
            "metavar": "S0=TEXT",
            "help": "a completed step (repeatable)",
        },
        key_decisions={
            "flag": "--decision",
            "metavar": "TEXT",
            "help": "a key decision (repeatable)",
        },
        replace={
            "help": "overwrite an earlier save of this session instead of keeping what it recorded"
        },
    )
    s.add_argument(
        "--stdin",
        action="store_true",
        help="read the params as a JSON or YAML mapping from standard input",
    )
    asks_daemon(s, cmd_save)

    ll = sub.add_parser("load-last", help="the newest session memory of a project")
    add_params(
        ll,
        "load_last",
        skip=("reveal_secrets",),  # a socket param only: the CLI never prints credentials
        dir={"required": True},
        project={"required": True, "type": project_slug},
    )
    asks_daemon(ll, cmd_load_last)

    c = sub.add_parser("context", help="a short, cited brief of what earlier sessions learned")
    add_params(
        c,
        "context",
        "task",
        dir={"required": True, "help": "a memory directory (repeatable)"},
        project={"type": project_slug},
        budget_tokens={"flag": "--budget"},
    )
    asks_daemon(c, cmd_context)


def save_params(args: argparse.Namespace) -> Mapping[str, object]:
    params: dict[str, object] = {}
    if args.stdin:
        import yaml  # noqa: PLC0415 - only --stdin needs a YAML parser

        try:
            doc = yaml.safe_load(sys.stdin.read())
        except yaml.YAMLError as exc:
            raise ConfigError(f"stdin is not valid JSON or YAML: {exc}") from None
        if not isinstance(doc, dict):
            raise ConfigError("stdin must hold a mapping of save params")
        params.update(doc)
    return {**params, **wire_params(args, "save", dir=args.dir)}


def cmd_save(args: argparse.Namespace) -> int:
    show(args, ask(args, "save", save_params(args)), _saved)
    return 0


def _saved(result: SaveResult) -> str:
    if result["created"]:
        return f"created {result['path']}"
    if (what := result.get("kept")) is None:
        return f"replaced {result['path']} (the earlier save of this session is overwritten)"
    held = kept(what)
    detail = f"kept from the earlier save: {held}" if held else "it restated the earlier save"
    return f"updated {result['path']} ({detail})"


def kept(what: Kept) -> str:
    """The reply's ``kept`` in words (``steps S0, S1; 2 key decisions``); empty for nothing."""
    parts = []
    if what["steps_completed"]:
        parts.append("steps " + ", ".join(what["steps_completed"]))
    count = what["key_decisions"]
    if count:
        parts.append(f"{count} key decision{'s' if count != 1 else ''}")
    if what["checkpoints_approved"]:
        parts.append("approved " + ", ".join(what["checkpoints_approved"]))
    if what["session_summary"]:
        parts.append("the summary")
    if what["active_state"]:
        parts.append("the active state")
    return "; ".join(parts)


def cmd_load_last(args: argparse.Namespace) -> int:
    result = ask(args, "load_last", wire_params(args, "load_last"))
    if args.json:
        print_json(result)
    elif result["found"]:
        print(result["resume_line"])
        print(result["path"])
        print()
        print(result["content"].rstrip())
    else:
        print(result["message"])
        if result.get("warning"):
            print(f"warning: {result['warning']}", file=sys.stderr)
    for skip in result["skipped"]:
        print(f"memoryd: skipped {skip['filename']}: {skip['reason']}", file=sys.stderr)
    return 0


def cmd_context(args: argparse.Namespace) -> int:
    result = ask(args, "context", wire_params(args, "context"))
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=2))
    else:
        print(result["text"])
    return 0
