"""The MCP tools' definitions as plain JSON data, sent verbatim in ``tools/list``.

Input schemas are made from the methods' declarations plus what a tool adds; output schemas
from the reply types (a ``NotRequired`` key is not required), open to a newer daemon's
fields. Only ``memory_save`` writes (its own session file). Each description says *when* to
call the tool.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import NoneType, UnionType
from typing import (
    Any,
    Literal,
    NotRequired,
    TypedDict,
    Union,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
)

from memoryd.errors import InvalidParams
from memoryd.integrations.mcp_calls import (
    SELECT_BOOKKEEPING,
    STATUS_BOOKKEEPING,
    ShownMemory,
    Why,
)
from memoryd.integrations.why import WhyReport
from memoryd.ipc.client import SocketChoice
from memoryd.methods import Context, LoadLast, Save, Select, Status
from memoryd.params import decode, params
from memoryd.replies import ContextReply, LoadLastReply, SaveResult, SelectResult, StatusReply
from memoryd.sessions._sections import STAMP
from memoryd.sessions.format import MAX_PROJECT_LEN, PROJECT_SLUG


class ObjectSchema(TypedDict):
    """A JSON Schema for an object: its properties are free-form JSON Schema."""

    type: str
    properties: Mapping[str, Mapping[str, object]]
    required: list[str]
    additionalProperties: NotRequired[bool]


class Tool(TypedDict):
    """One entry of ``tools/list`` (MCP's ``Tool``)."""

    name: str
    title: str
    description: str
    inputSchema: ObjectSchema
    outputSchema: ObjectSchema
    annotations: Mapping[str, object]


_STR = {"type": "string"}
_PATH = {"type": "string", "pattern": "^[^\\x00]*$"}  # no path holds a NUL

DIR: dict[str, object] = {
    **_PATH,
    "description": (
        "Absolute path of the memory folder. Optional: the default is the folder Claude Code "
        "keeps for the project (Claude Code's project, else the client's root, else the "
        "server's working directory)."
    ),
}
PROJECT: dict[str, object] = {
    "type": "string",
    "pattern": f"^{PROJECT_SLUG.pattern}$",
    "maxLength": MAX_PROJECT_LEN,
    "description": "Project slug: lowercase letters, digits, '.', '_', '-' (no '/')",
}
READ_ONLY = {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False}


def _object(properties: Mapping[str, Mapping[str, object]], required: list[str]) -> ObjectSchema:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


_JSON_TYPES = {"string": "string", "dir": "string", "integer": "integer", "boolean": "boolean"}


def _inputs(
    decl: type,
    leave_out: tuple[str, ...] = (),
    required: tuple[str, ...] = (),
    **given: Mapping[str, object],
) -> ObjectSchema:
    """``decl``'s params (less ``leave_out``) as a tool's input schema; ``given`` adds to a
    param's schema or adds a property; ``dir`` is never required (the server has a default)."""
    properties: dict[str, Mapping[str, object]] = {}
    needed = [p.name for p in params(decl) if p.required and p.name != "dir"]
    for p in params(decl):
        if p.name in leave_out or p.daemon_only:
            continue
        schema: dict[str, object] = {"type": _JSON_TYPES.get(p.kind, "object")}
        if p.kind == "strings":
            schema.update(type="array", items=_STR)
        if p.lo is not None:
            schema.update(minimum=p.lo, maximum=p.hi)
        if p.kind == "string" and (p.required or p.name in required):
            schema["minLength"] = 1
        if p.max_len is not None:
            schema["maxLength"] = p.max_len
        if p.choices:
            schema["enum"] = list(p.choices)
        if p.default not in (None, (), False):
            schema["default"] = p.default
        schema["description"] = p.help[0].upper() + p.help[1:]
        properties[p.name] = {**schema, **given.pop(p.name, {})}
    return _object({**properties, **given}, [*needed, *required])


_JSON_OF: dict[object, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _output(reply: type, leave_out: tuple[str, ...] = (), **more: object) -> ObjectSchema:
    """The TypedDict ``reply`` (less ``leave_out``, plus ``more``) as an open object schema."""
    hints = get_type_hints(reply, include_extras=True)
    fields = {k: v for k, v in hints.items() if k not in leave_out} | more
    optional: frozenset[str] = getattr(reply, "__optional_keys__", frozenset())
    return {
        "type": "object",
        "properties": {k: _schema(v) for k, v in fields.items()},
        "required": [
            k for k, v in fields.items() if k not in optional and get_origin(v) is not NotRequired
        ],
    }


def _schema(hint: Any) -> Mapping[str, object]:
    """A reply type as JSON Schema: a Literal an enum, ``X | None`` X or null, Any anything."""
    origin, args = get_origin(hint), get_args(hint)
    if origin is NotRequired:
        return _schema(args[0])
    if is_typeddict(hint):
        return _output(hint)
    if origin is Literal:
        return {"type": _JSON_OF[type(args[0])], "enum": list(args)}
    if origin is list:
        return {"type": "array", "items": _schema(args[0])}
    if origin is dict:
        return {"type": "object", "additionalProperties": _schema(args[1])}
    if origin in (Union, UnionType):
        (inner,) = (a for a in args if a is not NoneType)  # X | None: the only union replies use
        schema = _schema(inner)
        return {**schema, "type": [schema["type"], "null"]} if "type" in schema else schema
    return {} if hint is Any else {"type": _JSON_OF[hint]}


TOOLS: list[Tool] = [
    {
        "name": "memory_select",
        "title": "Select memories",
        "description": (
            "Pick the memories (at most 5) that clearly help with a task or question, with "
            "their text. Call it when you start a task, when the topic changes, or before "
            "touching an area you may have notes about. Each memory comes with its path, type, "
            "age and text (cut at 200 lines / 4 KB: read the file only for the rest). Nothing "
            "shown earlier in the session comes again. An empty answer means nothing relevant: "
            "do not retry with the same query; when 'note' is set, the folder itself was wrong "
            "(it names the likely one)."
        ),
        "inputSchema": _inputs(
            Select,
            ("ranker", "allow_secrets", "timeout_ms"),
            dir=DIR,
            session_id={
                "description": "Your session id (default: Claude Code's); nothing shown in it "
                "is repeated"
            },
            recent_tools={
                "description": "Tools/CLIs you used recently (e.g. 'pytest'); skips their docs"
            },
            surfaced={"description": "File names already shown to you this session"},
        ),
        "outputSchema": _output(SelectResult, SELECT_BOOKKEEPING, selected=list[ShownMemory]),
        "annotations": {"title": "Select memories", **READ_ONLY, "idempotentHint": False},
    },
    {
        "name": "memory_load_last",
        "title": "Load the last session",
        "description": (
            "Load the newest session memory of a project: a one-line resume note plus the full "
            "file (summary, steps completed, active state, key decisions). Call it once at the "
            "start of a session when continuing earlier work on the project."
        ),
        "inputSchema": _inputs(LoadLast, ("reveal_secrets",), dir=DIR, project=PROJECT),
        "outputSchema": _output(LoadLastReply),
        "annotations": {"title": "Load the last session", **READ_ONLY, "idempotentHint": True},
    },
    {
        "name": "memory_save",
        "title": "Save the session",
        "description": (
            "Write (or update) the session memory of a project so a later session can resume. "
            "Call it at checkpoints and before the session ends. Saving again in the same session "
            "(the same 'session' timestamp; by default, the same minute) updates that file and "
            "keeps what the earlier save recorded that this one does not restate: steps, key "
            "decisions, approved checkpoints, omitted fields; the reply's 'kept' lists them."
        ),
        "inputSchema": _inputs(
            Save,
            ("replace",),
            ("session_summary",),
            dir=DIR,
            project=PROJECT,
            session={"pattern": f"^{STAMP.pattern}$"},
            target_dir=_PATH,
            steps_completed={"additionalProperties": _STR},
            checkpoint_decisions={
                "additionalProperties": _object(
                    {
                        "option": _STR,
                        "note": _STR,
                        "regenerated_count": {"type": "integer", "minimum": 0},
                    },
                    ["option"],
                ),
            },
        ),
        "outputSchema": _output(SaveResult),
        "annotations": {
            "title": "Save the session",
            "readOnlyHint": False,
            "destructiveHint": False,
            "idempotentHint": True,
            "openWorldHint": False,
        },
    },
    {
        "name": "memory_context",
        "title": "Brief from earlier sessions",
        "description": (
            "A short brief, with citations, of what earlier sessions learned that bears on a "
            "task (decisions, dead ends, open work). Call it when starting work that earlier "
            "sessions may have touched, before re-deciding something."
        ),
        "inputSchema": _inputs(
            Context,
            dir=DIR,
            project={**PROJECT, "description": "Limit to one project slug"},
            more_dirs={
                "type": "array",
                "items": _PATH,
                "description": "Other memory folders to read too",
            },
        ),
        "outputSchema": _output(ContextReply),
        "annotations": {
            "title": "Brief from earlier sessions",
            **READ_ONLY,
            "idempotentHint": True,
        },
    },
    {
        "name": "memory_status",
        "title": "Daemon status",
        "description": (
            "Health of the memoryd daemon: state, watched folders, index size, and which socket "
            "this server uses and why. Call it when another memory tool fails or returns "
            "nothing unexpectedly."
        ),
        "inputSchema": _inputs(Status),
        "outputSchema": _output(StatusReply, STATUS_BOOKKEEPING, client_socket=SocketChoice),
        "annotations": {"title": "Daemon status", **READ_ONLY, "idempotentHint": True},
    },
    {
        "name": "memory_why",
        "title": "Why these memories",
        "description": (
            "For the last prompts of a session (default: this one), what memoryd injected and "
            "why: each memory's rank and score (or the judge that picked it), its estimated "
            "token cost, what was left out and why (already shown, a tool's usage doc, "
            "superseded, a secret, below the cut), and whether you then read or quoted it. "
            "Call it when the user asks why a memory was (or was not) shown."
        ),
        "inputSchema": _inputs(Why, dir=DIR),
        "outputSchema": _output(WhyReport),
        "annotations": {"title": "Why these memories", **READ_ONLY, "idempotentHint": True},
    },
]

BY_NAME = {tool["name"]: tool for tool in TOOLS}
DECLS: dict[str, type] = {
    "memory_select": Select,
    "memory_load_last": LoadLast,
    "memory_save": Save,
    "memory_context": Context,
    "memory_status": Status,
    "memory_why": Why,
}


def check_arguments(name: str, args: Mapping[str, object]) -> None:
    """Raise ``invalid_params`` unless tool ``name`` takes ``args``: names its schema lacks
    (a param the tool leaves out too), then the method's own decoder, then what the tool alone
    requires. The daemon checks the rest (a slug, a time stamp) for every client."""
    schema = BY_NAME[name]["inputSchema"]
    unknown = sorted(set(args) - set(schema["properties"]))
    if unknown:
        known = ", ".join(sorted(schema["properties"])) or "none"
        raise InvalidParams(
            f"unknown argument(s): {', '.join(unknown)} (known: {known})", {"fields": unknown}
        )
    given = dict(args)
    if "dir" in schema["properties"] and given.get("dir", "") == "":
        given["dir"] = "."  # none given: the server's default stands in
    more = given.pop("more_dirs", [])
    if not isinstance(given.get("dir", "."), str):
        raise InvalidParams("'dir' must be a directory path", {"field": "dir"})
    if not isinstance(more, list) or not all(isinstance(d, str) and d for d in more):
        raise InvalidParams("'more_dirs' must be a list of directory paths", {"field": "more_dirs"})
    decode(DECLS[name], given)
    for field in schema["required"]:
        if not args.get(field):
            raise InvalidParams(f"'{field}' is required", {"field": field})
