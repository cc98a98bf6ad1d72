"""``save``, ``load_last`` and ``context`` on disk and in the index.

A second save of a session is merged into the first unless ``replace``; saves into one folder
take turns under its save lock and write atomically. Memory files are never deleted.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from memoryd import requests as p
from memoryd.bounded_read import MAX_READ_BYTES, NotAFile, read_capped
from memoryd.check_replies import CheckFinding
from memoryd.errors import InvalidParams, NotFound, NotRegularFile
from memoryd.indexer import queries
from memoryd.indexer.parse import describe_os_error, parse_bytes
from memoryd.indexer.records import KIND_SESSION, unexpected
from memoryd.indexer.secrets import redact, redact_value
from memoryd.methods import Save
from memoryd.paths import session_stamp_problem
from memoryd.replies import ContextReply, Kept, LoadLastReply, SaveResult, SkippedSession
from memoryd.sessions._sections import SessionDoc, resume_line
from memoryd.sessions.brief import ParsedSessions, build_brief, unavailable_message
from memoryd.sessions.format import (
    SCHEMA_VERSION,
    SessionInput,
    merge,
    render_session,
    session_filename,
    session_input_from_file,
    validate_save_params,
)
from memoryd.sessions.writes import acquire, unwritable, write_atomic


@dataclass(frozen=True)
class SaveRequest:
    """A checked ``save``: the real directory, the session's fields, how to write them."""

    dir: str
    session: SessionInput
    replace: bool = False


def save_request(req: Save) -> SaveRequest:
    """``save``'s params checked: the directory first (a missing one is ``not_found``: ``save``
    creates nothing), then every field of the session."""

    def missing(given: str) -> NotFound:
        return NotFound(f"memory directory not found at {given}", {"field": "dir"})

    directory = p.directory(req.dir, missing=missing)
    return SaveRequest(directory, validate_save_params(req), req.replace)


def save(request: SaveRequest) -> SaveResult:
    """Write ``{dir}/{session}-{project}.md`` under the folder's save lock, on disk on return.

    A path that is not a regular file is ``not_a_file``; a write the disk refuses is
    ``unwritable``, nothing half-written left.
    """
    with acquire(request.dir):
        inp = request.session
        filename = session_filename(inp.project, inp.session)
        path = os.path.join(request.dir, filename)
        previous: Mapping[str, object] | None = None
        kept: Kept | None = None
        created = not os.path.lexists(path)
        if not created:
            previous, data = _previous_session(path, merging=not request.replace)
            if previous is not None and not request.replace:
                earlier = session_input_from_file(
                    filename, previous, data.decode("utf-8", errors="replace")
                )
                inp, kept = merge(inp, earlier)
        text = render_session(inp, previous)
        migrated_from = None if previous is None else str(previous.get("schema_version", "1.0"))
        encoded = text.encode()
        if len(encoded) > MAX_READ_BYTES:
            raise _over_read_cap(path, f"this save would make it {len(encoded):,} bytes, more than")
        written = parse_bytes(encoded, KIND_SESSION)
        if written.error is not None:  # a bug in render_session, never user input
            raise RuntimeError(f"refusing to write an unreadable session file: {written.error}")
        try:
            write_atomic(path, text)
        except OSError as exc:
            raise unwritable(path, exc) from None
        return {
            "path": path,
            "filename": os.path.basename(path),
            "created": created,
            "kept": kept,
            "migrated_from": None if migrated_from == SCHEMA_VERSION else migrated_from,
            "schema_version": SCHEMA_VERSION,
            "bytes": len(encoded),
            "dir": os.path.dirname(path),  # the service names the indexed folder
        }


def _previous_session(path: str, *, merging: bool) -> tuple[Mapping[str, object] | None, bytes]:
    """The fields (None when they do not parse) and bytes of the file ``save`` replaces; one
    over the read cap cannot be merged into (``replace`` still overwrites it)."""
    try:
        data, truncated = read_capped(path, follow=False)
    except NotAFile as exc:
        raise NotRegularFile(
            f"cannot save: {path} is {exc.what}, not a session file; memoryd writes session "
            "memories as regular files and leaves this one alone (move it away and save again)",
            {"path": path, "found": exc.what},
        ) from None
    except OSError as exc:
        raise unwritable(path, exc, doing="read the session file it would replace") from None
    if truncated and merging:
        raise _over_read_cap(path, "it is already bigger than")
    old = parse_bytes(data, KIND_SESSION, truncated=truncated)
    return (old.meta if old.error is None else None), data


def _over_read_cap(path: str, how: str) -> InvalidParams:
    """A save that would leave a session file memoryd can only read the start of."""
    cap = MAX_READ_BYTES // 1024
    return InvalidParams(
        f"cannot save into {path}: {how} the {cap} KiB memoryd reads of a session file, "
        "and a later save would drop what lies past that; nothing was written "
        "(save under a new session, or shorten this save)",
        {"field": "session", "path": path, "limit_bytes": MAX_READ_BYTES},
    )


def load_last(
    conn: sqlite3.Connection,
    directory: str,
    project: str,
    *,
    reveal_secrets: bool = False,
) -> LoadLastReply:
    """The newest readable session memory for ``project`` in ``directory``, from the index.

    A session stamped over a day in the future is skipped (said why), like an unreadable one.
    Credentials are redacted in ``content`` and ``fields`` unless ``reveal_secrets``.
    """
    rows = conn.execute(
        "SELECT path, filename, session, error FROM files WHERE directory = ? "
        "AND kind = 'session' AND project = ? ORDER BY session DESC, filename DESC",
        (directory, project),
    ).fetchall()
    skipped: list[SkippedSession] = []
    current = dt.datetime.now().astimezone()
    for path, filename, stamp, indexed_error in rows:
        error = indexed_error or session_stamp_problem(stamp, current)
        if error is not None:
            skipped.append({"filename": filename, "reason": error})
            continue
        try:
            data, truncated = read_capped(path, follow=False)
        except OSError as exc:
            skipped.append({"filename": filename, "reason": describe_os_error(exc, path)})
            continue
        parsed = parse_bytes(data, KIND_SESSION, truncated=truncated)
        if parsed.error is not None:  # changed on disk since it was indexed
            skipped.append({"filename": filename, "reason": parsed.error})
            continue
        try:
            line, hours = resume_line(project, parsed.meta, current, filename=filename)
        except Exception as exc:  # one file nothing foresaw: the next one is tried
            skipped.append({"filename": filename, "reason": unexpected("cannot resume", exc)})
            continue
        # A file over the cap is answered with its first MiB (a character cut at the end dropped).
        content = data.decode("utf-8", errors="ignore" if truncated else "strict")
        fields = parsed.meta
        if not reveal_secrets:
            content, fields = redact(content), redact_value(fields)
        cap = f"is over the {MAX_READ_BYTES // 1024} KiB cap: only its start is shown"
        extra = {"truncated": True, "warning": f"{filename} {cap}"} if truncated else {}
        found: dict[str, Any] = {
            **extra,
            "found": True,
            "path": path,
            "filename": filename,
            "content": content,
            "fields": fields,
            "schema_version": parsed.meta.get("schema_version", "1.0"),
            "time_since_last_session_hours": None if math.isnan(hours) else round(hours, 3),
            "resume_line": line,
            "skipped": skipped,
        }
        return cast(LoadLastReply, found)
    result: LoadLastReply = {
        "found": False,
        "message": f"No previous memory found for project '{project}'",
        "skipped": skipped,
    }
    if skipped:
        result["warning"] = (
            f"all {len(skipped)} session memories for '{project}' are unreadable or corrupted"
        )
    return result


def context(
    conn: sqlite3.Connection,
    directories: Sequence[str],
    task: str,
    project: str | None,
    budget_tokens: int,
    *,
    parsed: ParsedSessions | None = None,
) -> ContextReply:
    """The cited prior-session brief for ``task`` over the sessions in ``directories``; an
    unreadable directory makes it "unavailable", not silently empty."""
    scope_dirs = ", ".join(directories)
    scope = f"project '{project}' in {scope_dirs}" if project else scope_dirs
    for directory in directories:
        reason = dir_unreadable(directory)
        if reason is not None:
            text = unavailable_message(f"{directory}: {reason}")
            return {
                "text": text,
                "status": "unavailable",
                "scope": scope,
                "findings": [],
                "sessions_read": [],
                "budget_tokens": budget_tokens,
            }
    docs: list[SessionDoc] = []
    for directory in directories:
        rows = conn.execute(
            "SELECT path, filename, project, session, error FROM files WHERE directory = ? "
            "AND kind = 'session' AND (? IS NULL OR project = ?) ORDER BY session",
            (directory, project or None, project or None),
        )
        for path, filename, proj, session, indexed_error in rows:
            error = indexed_error or session_stamp_problem(session)
            body, reason = _session_text(path) if error is None else (None, None)
            docs.append(SessionDoc(path, filename, proj, session, body, error or reason))
    brief = build_brief(task, docs, scope=scope, budget_tokens=budget_tokens, parsed=parsed)
    if project and not docs:
        # A mistyped project looks like "nothing useful"; naming what exists shows the slip.
        marks = ", ".join("?" for _ in directories)
        rows = conn.execute(
            "SELECT DISTINCT project FROM files WHERE kind = 'session' "
            f"AND directory IN ({marks}) AND project IS NOT NULL ORDER BY project",
            tuple(directories),
        )
        known = [r[0] for r in rows]
        there = ", ".join(known) if known else "none"
        brief["text"] += (
            f"; there are no session memories of project '{project}' "
            f"(projects with sessions there: {there})"
        )
        brief["projects"] = known
    return brief


def stamp_findings(conn: sqlite3.Connection, directory: str) -> list[CheckFinding]:
    """Session files in or below ``directory`` whose stamp is left out of "the newest session"."""
    now = dt.datetime.now().astimezone()
    found: list[CheckFinding] = []
    for f in queries.files_under(conn, directory):
        if f.kind == KIND_SESSION and f.session is not None:
            problem = session_stamp_problem(f.session, now)
            if problem is not None:
                found.append({"filename": f.filename, "path": f.path, "problem": problem})
    return found


def _session_text(path: str) -> tuple[str | None, str | None]:
    """``(text, None)`` of a session file's first MiB, newlines as text mode reads them,
    secrets redacted; or ``(None, why not)``."""
    try:
        data, truncated = read_capped(path, follow=False)
        decoded = data.decode("utf-8", errors="ignore" if truncated else "strict")
    except OSError as exc:
        return None, describe_os_error(exc, path)
    except UnicodeDecodeError as exc:
        return None, f"not valid UTF-8 at offset {exc.start}"
    return redact(decoded.replace("\r\n", "\n").replace("\r", "\n")), None


def dir_unreadable(directory: str) -> str | None:
    """Why the session history in ``directory`` cannot be read, or None."""
    if not os.access(directory, os.R_OK | os.X_OK):
        return "permission denied"
    return None
