"""The session memory file: validate ``save`` params, render the file, read it back.

A session file is ``{dir}/{session}-{project}.md`` where ``session`` is the
local start time ``YYYY-MM-DD-HH-MM``; the timestamp prefix makes lexicographic
order chronological, which is what ``load_last`` relies on. Everything here is
pure: the socket layer owns I/O, atomic writes and index lookups.

Schema 1.1 adds ``schema_version`` and ``last_session_at``. Files without
``schema_version`` are 1.0; they stay readable and become 1.1 the next time the
project is saved (``render_session`` always writes 1.1).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from memoryd.errors import InvalidParams
from memoryd.methods import MODES, STATUSES, Save
from memoryd.params import params
from memoryd.paths import SESSION_FILENAME, SESSION_STAMP_FORMAT, session_stamp_problem
from memoryd.sessions._sections import Entry, SessionSections, parse_sections

SCHEMA_VERSION = "1.1"
SESSION_FORMAT = SESSION_STAMP_FORMAT
MAX_PROJECT_LEN = 100

_PROJECT = re.compile(r"[a-z0-9][a-z0-9._-]*")
_SESSION = re.compile(r"\d{4}-\d{2}-\d{2}-\d{2}-\d{2}")
_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_DECISION_KEYS = ("option", "note", "regenerated_count")
# ``dir`` is resolved by the request's parser, ``replace`` decides how the file is written.
SESSION_FIELDS = tuple(p.name for p in params(Save) if p.name not in ("dir", "replace"))


@dataclass(frozen=True, slots=True)
class SessionInput:
    """The validated params of ``save`` (snake_case, defaults filled in)."""

    project: str
    session: str
    mode: str | None
    status: str | None
    last_checkpoint: str | None
    checkpoints_approved: list[str]
    checkpoint_decisions: dict[str, dict[str, object]]
    target_dir: str | None
    session_summary: str
    steps_completed: dict[str, str]
    active_state: str
    key_decisions: list[str]


def session_filename(project: str, session: str) -> str:
    """``2025-03-24-11-20-shop-backend.md``."""
    return f"{session}-{project}.md"


def session_started(session: str) -> dt.datetime:
    """The session timestamp as an aware datetime in local time."""
    return dt.datetime.strptime(session, SESSION_FORMAT).astimezone()


# ---------------------------------------------------------------- validation


def validate_save_params(
    params: Mapping[str, object], *, now: dt.datetime | None = None
) -> SessionInput:
    """Check every field of a session (``SESSION_FIELDS``; other keys are not read); the
    InvalidParams message names the bad field."""
    return SessionInput(
        project=check_project(params.get("project")),
        session=_session(params.get("session"), now),
        mode=_choice(params, "mode", MODES),
        status=_choice(params, "status", STATUSES),
        last_checkpoint=_label(params.get("last_checkpoint"), "last_checkpoint", optional=True),
        checkpoints_approved=_labels(params.get("checkpoints_approved")),
        checkpoint_decisions=_decisions(params.get("checkpoint_decisions")),
        target_dir=_text(params.get("target_dir"), "target_dir", optional=True, line=True),
        session_summary=_body(params.get("session_summary"), "session_summary"),
        steps_completed=_steps(params.get("steps_completed")),
        active_state=_body(params.get("active_state"), "active_state"),
        key_decisions=_bullets(params.get("key_decisions")),
    )


def _is_slug(name: str) -> bool:
    return len(name) <= MAX_PROJECT_LEN and bool(_PROJECT.fullmatch(name)) and ".." not in name


def project_case_note(project: object) -> str | None:
    """The note a reply carries when :func:`check_project` lowercased the name it was given."""
    if isinstance(project, str) and project != project.lower() and _is_slug(project.lower()):
        return f"project name {project!r} lowercased to {project.lower()!r}"
    return None


def check_project(project: object) -> str:
    """A project name is a slug: it becomes part of a filename, so no '/' and no '..'.

    ``TaskTrack`` is an obvious spelling of ``tasktrack``: a name that is a slug
    but for its capitals is lowercased (callers say so with
    :func:`project_case_note`) rather than refused.
    """
    if not isinstance(project, str):
        raise _invalid("project", f"is required and must be a string, got {_kind(project)}")
    if not _is_slug(project.lower()):
        raise _invalid(
            "project",
            f"must be a slug of at most {MAX_PROJECT_LEN} characters "
            f"(lowercase letters, digits, '.', '_', '-'; no '/' or '..'), got {project!r}",
        )
    return project.lower()


def _invalid(field: str, problem: str) -> InvalidParams:
    """The error for one bad field: its name opens the message and is ``data.field``."""
    return InvalidParams(f"'{field}' {problem}", {"field": field})


def _kind(value: object) -> str:
    return "nothing" if value is None else type(value).__name__


def _session(value: object, now: dt.datetime | None) -> str:
    if value is None:
        current = now if now is not None else dt.datetime.now().astimezone()
        if current.tzinfo is not None:
            current = current.astimezone()  # the filename records local time
        return current.strftime(SESSION_FORMAT)
    if not isinstance(value, str) or not _SESSION.fullmatch(value):
        raise _invalid("session", f"must be a YYYY-MM-DD-HH-MM timestamp, got {value!r}")
    try:
        session_started(value)  # local time: year 1 has none in a zone east of UTC
    except (ValueError, OverflowError):
        raise _invalid("session", f"is not a real date and time: {value!r}") from None
    if session_stamp_problem(value, now) is not None:  # a real time, so one too far ahead
        raise _invalid(
            "session",
            f"is more than a day after now: {value!r} (load_last and the resume hook leave "
            "such a session out, so it would never be resumed)",
        )
    return value


def _choice(params: Mapping[str, object], field: str, allowed: tuple[str, ...]) -> str | None:
    value = params.get(field)
    if value is None or value in allowed:
        return value
    raise _invalid(field, f"must be one of {', '.join(allowed)}, got {value!r}")


def _text(value: object, field: str, *, optional: bool = False, line: bool = False) -> str | None:
    """A string without control characters (and without newlines when ``line``)."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise _invalid(field, f"must be a string, got {_kind(value)}")
    allowed = "" if line else "\n\t"
    bad = next((c for c in value if not c.isprintable() and c not in allowed), None)
    if bad is not None:
        raise _invalid(field, f"contains a control character {bad!r}")
    return value


def _body(value: object, field: str) -> str:
    """Free text of a body section; a ``## `` line would start a new section."""
    text = _text("" if value is None else value, field) or ""
    for number, line in enumerate(text.split("\n"), 1):
        if line.startswith("## "):
            raise _invalid(
                field,
                f"line {number} starts with '## ', which would end the section; "
                "use '###' for sub-headings",
            )
    return text.strip("\n")


def _label(value: object, field: str, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not _LABEL.fullmatch(value):
        raise _invalid(
            field, f"must be an id like CP-S2 (letters, digits, '.', '_', '-'), got {value!r}"
        )
    return value


def _labels(value: object) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _invalid("checkpoints_approved", f"must be a list, got {_kind(value)}")
    return [_label(item, f"checkpoints_approved[{i}]") or "" for i, item in enumerate(value)]


def _decisions(value: object) -> dict[str, dict[str, object]]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _invalid("checkpoint_decisions", f"must be a mapping, got {_kind(value)}")
    result: dict[str, dict[str, object]] = {}
    for checkpoint, decision in value.items():
        where = f"checkpoint_decisions.{checkpoint}"
        _label(checkpoint, where)
        if not isinstance(decision, Mapping):
            raise _invalid(where, f"must be a mapping, got {_kind(decision)}")
        extra = sorted(str(k) for k in decision if k not in _DECISION_KEYS)
        if extra:
            raise _invalid(where, f"has unknown keys: {', '.join(extra)}")
        if "option" not in decision:
            raise _invalid(f"{where}.option", "is required")
        clean: dict[str, object] = {"option": _text(decision["option"], f"{where}.option")}
        if decision.get("note") is not None:
            clean["note"] = _text(decision["note"], f"{where}.note")
        count = decision.get("regenerated_count")
        if count is not None:
            if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                raise _invalid(f"{where}.regenerated_count", "must be a non-negative integer")
            clean["regenerated_count"] = count
        result[str(checkpoint)] = clean
    return result


def _steps(value: object) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _invalid(
            "steps_completed", f"must be a mapping of step id to text, got {_kind(value)}"
        )
    steps: dict[str, str] = {}
    for step, text in value.items():
        _label(step, f"steps_completed.{step}")
        steps[str(step)] = _text(text, f"steps_completed.{step}") or ""
    return steps


def _bullets(value: object) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _invalid("key_decisions", f"must be a list of strings, got {_kind(value)}")
    items = [_text(item, f"key_decisions[{i}]") or "" for i, item in enumerate(value)]
    blank = next((i for i, item in enumerate(items) if not item.strip()), None)
    if blank is not None:
        raise _invalid(f"key_decisions[{blank}]", "is empty")
    return items


# ----------------------------------------------------------------- rendering


def render_session(inp: SessionInput, previous_meta: Mapping[str, object] | None = None) -> str:
    """The full text of the session file, always schema 1.1.

    ``previous_meta`` (the parsed frontmatter of the project's last session,
    possibly 1.0) fills frontmatter fields this save leaves empty, and its
    checkpoint decisions are kept unless this save decides the same checkpoint
    again; that is how an old file's fields migrate forward.
    """
    prev = previous_meta or {}
    approved = inp.checkpoints_approved or _str_list(prev.get("checkpoints-approved"))
    decisions = {**_prev_decisions(prev.get("checkpoint_decisions")), **inp.checkpoint_decisions}
    lines = ["---", f"schema_version: {SCHEMA_VERSION}"]
    lines.append(f"project-name: {_scalar(inp.project)}")
    lines.append(f"session: {_scalar(inp.session)}")
    for key, value in (
        ("mode", inp.mode or prev.get("mode")),
        ("status", inp.status or prev.get("status")),
        ("last-checkpoint", inp.last_checkpoint or prev.get("last-checkpoint")),
    ):
        if isinstance(value, str):
            lines.append(f"{key}: {_scalar(value)}")
    lines.append(f"checkpoints-approved: [{', '.join(_scalar(c) for c in approved)}]")
    if decisions:
        lines.append("checkpoint_decisions:")
        for checkpoint, decision in decisions.items():
            inner = ", ".join(
                f"{k}: {_scalar(decision[k])}" for k in _DECISION_KEYS if k in decision
            )
            lines.append(f"  {_scalar(checkpoint)}: {{{inner}}}")
    else:
        lines.append("checkpoint_decisions: {}")
    target = inp.target_dir if inp.target_dir is not None else prev.get("target-dir")
    if isinstance(target, str):
        lines.append(f"target-dir: {_scalar(target)}")
    lines.append(f"last_session_at: {session_started(inp.session).isoformat()}")
    lines += ["---", "", "## Session summary", inp.session_summary, "", "## Steps completed"]
    lines += [_bullet(f"{step}: {text}") for step, text in inp.steps_completed.items()]
    lines += ["", "## Active state", inp.active_state, "", "## Key decisions"]
    lines += [_bullet(text) for text in inp.key_decisions]
    return "\n".join(lines) + "\n"


def _scalar(value: object) -> str:
    """One YAML value on one line, safe in block and flow context alike."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    text = str(value)
    dumped = yaml.safe_dump(text, width=1 << 30, allow_unicode=True).removesuffix("...\n")
    dumped = dumped.rstrip("\n")
    if "\n" in dumped or any(c in dumped for c in ",[]{}#"):
        # A JSON string is a valid YAML double-quoted scalar and never spans lines.
        return json.dumps(text, ensure_ascii=False)
    return dumped


def _bullet(text: str) -> str:
    """A list item; later lines are indented so they stay part of the item."""
    first, *rest = [line for line in text.strip().split("\n") if line.strip()]
    return "\n".join([f"- {first}", *(f"  {line}" for line in rest)])


def _str_list(value: object) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else []


def _prev_decisions(value: object) -> dict[str, dict[str, object]]:
    if not isinstance(value, Mapping):
        return {}
    return {
        str(k): {key: v[key] for key in _DECISION_KEYS if key in v}
        for k, v in value.items()
        if isinstance(v, Mapping) and "option" in v
    }


# ------------------------------------------------------------------- reading


def session_input_from_file(filename: str, meta: Mapping[str, Any], text: str) -> SessionInput:
    """Rebuild the ``save`` input from a parsed file (1.0 or 1.1) so it can be re-rendered."""
    match = SESSION_FILENAME.match(filename)
    if match is None:
        raise ValueError(f"not a session filename: {filename!r}")
    sections = parse_sections(text)
    return SessionInput(
        project=match.group(2),
        session=match.group(1),
        mode=_opt_str(meta.get("mode")),
        status=_opt_str(meta.get("status")),
        last_checkpoint=_opt_str(meta.get("last-checkpoint")),
        checkpoints_approved=_str_list(meta.get("checkpoints-approved")),
        checkpoint_decisions=_prev_decisions(meta.get("checkpoint_decisions")),
        target_dir=_opt_str(meta.get("target-dir")),
        session_summary=_section_text(sections.summary),
        steps_completed={e.label or f"S{i}": e.text for i, e in enumerate(sections.steps)},
        active_state=_section_text(sections.active_state, bullets=True),
        key_decisions=[entry.text for entry in sections.key_decisions],
    )


def _opt_str(value: object) -> str | None:
    return None if value is None else str(value)


def _section_text(entries: tuple[Entry, ...], *, bullets: bool = False) -> str:
    return "\n".join(f"- {e.text}" if bullets else e.text for e in entries)


def last_session_time(
    meta: Mapping[str, object], filename: str | None = None
) -> dt.datetime | None:
    """When the session started: ``last_session_at``, else the filename or ``session``."""
    raw = meta.get("last_session_at")
    if isinstance(raw, str):
        try:
            when = dt.datetime.fromisoformat(raw)
            return when if when.tzinfo else when.astimezone()
        except (ValueError, OverflowError):  # not a time, or one local time cannot show
            pass
    for candidate in (filename or "", str(meta.get("session", ""))):
        match = _SESSION.match(candidate)
        if match:
            try:
                return session_started(match.group(0))
            except (ValueError, OverflowError):
                continue
    return None


def resume_line(
    project: str, meta: Mapping[str, object], now: dt.datetime, *, filename: str | None = None
) -> tuple[str, float]:
    """``Resuming `shop-backend` (last touched 3 days ago, status: in-progress at CP-S2)``.

    Returns the line and the hours since the session started (NaN when no time
    is known: a 1.0 file whose ``session`` is not a timestamp and no filename).
    """
    when = last_session_time(meta, filename)
    current = now if now.tzinfo else now.astimezone()
    hours = (current - when).total_seconds() / 3600 if when else float("nan")
    details = [f"last touched {_ago(hours)}"] if when else ["last touched at an unknown time"]
    status = meta.get("status")
    checkpoint = meta.get("last-checkpoint")
    if status and checkpoint:
        details.append(f"status: {status} at {checkpoint}")
    elif status or checkpoint:
        details.append(f"status: {status}" if status else f"at {checkpoint}")
    return f"Resuming `{project}` ({', '.join(details)})", hours


def _ago(hours: float) -> str:
    if hours < 0:
        return "in the future (clock skew?)"
    if hours < 1:
        minutes = int(hours * 60)
        return "just now" if minutes < 1 else _plural(minutes, "minute")
    if hours < 48:
        return _plural(int(hours), "hour")
    days = int(hours // 24)
    return _plural(days, "day") if days < 60 else _plural(days // 30, "month")


def _plural(count: int, unit: str) -> str:
    return f"{count} {unit}{'' if count == 1 else 's'} ago"


__all__ = [
    "SCHEMA_VERSION",
    "SessionInput",
    "SessionSections",
    "last_session_time",
    "parse_sections",
    "render_session",
    "resume_line",
    "session_filename",
    "session_input_from_file",
    "session_started",
    "validate_save_params",
]
