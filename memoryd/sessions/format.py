"""The session memory file ``{session}-{project}.md``: ``save``'s fields checked, rendered, merged.

``session`` is the local start time ``YYYY-MM-DD-HH-MM``, so name order is time order. A file
without ``schema_version`` is 1.0 and stays readable; :func:`render_session` always writes 1.1.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import yaml

from memoryd.errors import InvalidParams
from memoryd.methods import Save
from memoryd.paths import SESSION_FILENAME, SESSION_STAMP_FORMAT, session_stamp_problem
from memoryd.replies import Kept
from memoryd.sessions._sections import STAMP, Entry, parse_sections, session_started

SCHEMA_VERSION = "1.1"
MAX_PROJECT_LEN = 100

PROJECT_SLUG = re.compile(r"[a-z0-9][a-z0-9._-]*")
_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_DECISION_KEYS = ("option", "note", "regenerated_count")


@dataclass(frozen=True, slots=True)
class SessionInput:
    """A checked ``save``'s session fields (defaults filled in)."""

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


def validate_save_params(req: Save, *, now: dt.datetime | None = None) -> SessionInput:
    """``req``'s session fields checked past their wire types; the error names the bad field."""
    steps = req.steps_completed or {}
    return SessionInput(
        project=check_project(req.project),
        session=_session(req.session, now),
        mode=req.mode,
        status=req.status,
        last_checkpoint=None
        if req.last_checkpoint is None
        else _label(req.last_checkpoint, "last_checkpoint"),
        checkpoints_approved=[
            _label(c, f"checkpoints_approved[{i}]") for i, c in enumerate(req.checkpoints_approved)
        ],
        checkpoint_decisions=_decisions(req.checkpoint_decisions or {}),
        target_dir=None
        if req.target_dir is None
        else _text(req.target_dir, "target_dir", line=True),
        session_summary=_body(req.session_summary, "session_summary"),
        steps_completed={
            _label(step, f"steps_completed.{step}"): _text(text, f"steps_completed.{step}")
            for step, text in steps.items()
        },
        active_state=_body(req.active_state, "active_state"),
        key_decisions=_bullets(req.key_decisions),
    )


def _is_slug(name: str) -> bool:
    return len(name) <= MAX_PROJECT_LEN and bool(PROJECT_SLUG.fullmatch(name)) and ".." not in name


def project_case_note(project: object) -> str | None:
    """The note a reply carries when :func:`check_project` lowercased the name it was given."""
    if isinstance(project, str) and project != project.lower() and _is_slug(project.lower()):
        return f"project name {project!r} lowercased to {project.lower()!r}"
    return None


def check_project(project: str) -> str:
    """The project's slug (it becomes part of a filename); a slug but for its capitals is
    lowercased, not refused."""
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


def _session(value: str | None, now: dt.datetime | None) -> str:
    if value is None:
        current = now if now is not None else dt.datetime.now().astimezone()
        if current.tzinfo is not None:
            current = current.astimezone()  # the filename records local time
        return current.strftime(SESSION_STAMP_FORMAT)
    if not STAMP.fullmatch(value):
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


def _text(value: object, field: str, *, line: bool = False) -> str:
    """A string without control characters (and without newlines when ``line``)."""
    if not isinstance(value, str):
        raise _invalid(field, f"must be a string, got {_kind(value)}")
    allowed = "" if line else "\n\t"
    bad = next((c for c in value if not c.isprintable() and c not in allowed), None)
    if bad is not None:
        raise _invalid(field, f"contains a control character {bad!r}")
    return value


def _body(value: str | None, field: str) -> str:
    """Free text of a body section; a ``## `` line would start a new section."""
    text = _text(value or "", field)
    for number, line in enumerate(text.split("\n"), 1):
        if line.startswith("## "):
            raise _invalid(
                field,
                f"line {number} starts with '## ', which would end the section; "
                "use '###' for sub-headings",
            )
    return text.strip("\n")


def _label(value: object, field: str) -> str:
    if not isinstance(value, str) or not _LABEL.fullmatch(value):
        raise _invalid(
            field, f"must be an id like CP-S2 (letters, digits, '.', '_', '-'), got {value!r}"
        )
    return value


def _decisions(value: Mapping[str, Any]) -> dict[str, dict[str, object]]:
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
        result[checkpoint] = clean
    return result


def _bullets(value: tuple[str, ...]) -> list[str]:
    items = [_text(item, f"key_decisions[{i}]") for i, item in enumerate(value)]
    blank = next((i for i, item in enumerate(items) if not item.strip()), None)
    if blank is not None:
        raise _invalid(f"key_decisions[{blank}]", "is empty")
    return items


def render_session(inp: SessionInput, previous_meta: Mapping[str, object] | None = None) -> str:
    """The full text of the session file, always schema 1.1.

    ``previous_meta`` (the project's last session, maybe 1.0) fills the frontmatter fields this
    save leaves empty; its checkpoint decisions stay unless this save decides them again.
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


def merge(new: SessionInput, old: SessionInput) -> tuple[SessionInput, Kept]:
    """``new`` (a second save of one session) laid over ``old``, and what of ``old`` was kept.

    What ``new`` gives wins; steps, decisions and checkpoints only ``old`` has are kept before
    the new ones; an empty summary or active state keeps the older text.
    """
    kept_steps = [step for step in old.steps_completed if step not in new.steps_completed]
    kept_decisions = [d for d in old.key_decisions if d not in new.key_decisions]
    kept_checkpoints = [c for c in old.checkpoints_approved if c not in new.checkpoints_approved]
    keep_summary = not new.session_summary.strip() and bool(old.session_summary.strip())
    keep_active = not new.active_state.strip() and bool(old.active_state.strip())
    merged = replace(
        new,
        steps_completed={**old.steps_completed, **new.steps_completed},
        key_decisions=[*kept_decisions, *new.key_decisions],
        checkpoints_approved=[*kept_checkpoints, *new.checkpoints_approved],
        session_summary=old.session_summary if keep_summary else new.session_summary,
        active_state=old.active_state if keep_active else new.active_state,
    )
    kept: Kept = {
        "steps_completed": kept_steps,
        "key_decisions": len(kept_decisions),
        "checkpoints_approved": kept_checkpoints,
        "session_summary": keep_summary,
        "active_state": keep_active,
    }
    return merged, kept


def _opt_str(value: object) -> str | None:
    return None if value is None else str(value)


def _section_text(entries: tuple[Entry, ...], *, bullets: bool = False) -> str:
    return "\n".join(f"- {e.text}" if bullets else e.text for e in entries)
