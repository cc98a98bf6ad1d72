"""The I/O around session memories: atomic ``save``, indexed ``load_last``, ``context``.

The format and the brief are pure (``format``, ``brief``); this module reads
the index, reads and writes files, and shapes the protocol's answers. It is
shared by the daemon's handlers and the in-process CLI.

A second save of a session keeps what the first recorded and the second does
not restate (``memoryd.sessions.merge``); ``replace`` overwrites instead.
Writes are atomic: a temp file in the same directory, fsync, rename, fsync of
the directory. A crash leaves either the old file or the new one, never half
of one. Saves into one folder take turns under its save lock, so a save always
merges into the file the one before it wrote. Memory files are never deleted.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import math
import os
import re
import sqlite3
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from memoryd import requests as p
from memoryd._sized_cache import SizedCache
from memoryd.bounded_read import MAX_READ_BYTES, NotAFile, read_capped
from memoryd.errors import InvalidParams, NotFound, NotRegularFile, Unwritable
from memoryd.indexer import queries
from memoryd.indexer.parse import content_hash, describe_os_error, parse_bytes
from memoryd.indexer.records import KIND_SESSION, unexpected
from memoryd.indexer.secrets import redact, redact_value
from memoryd.indexer.store import process_alive
from memoryd.methods import Save
from memoryd.params import decode
from memoryd.paths import session_stamp_problem
from memoryd.replies import (
    CheckFinding,
    ContextReply,
    Kept,
    LoadLastReply,
    SaveResult,
    SkippedSession,
)
from memoryd.sessions import _save_lock
from memoryd.sessions.brief import ParsedSessions, SessionDoc, build_brief, unavailable_message
from memoryd.sessions.format import (
    SCHEMA_VERSION,
    SESSION_FIELDS,
    SessionInput,
    render_session,
    resume_line,
    session_filename,
    session_input_from_file,
    validate_save_params,
)
from memoryd.sessions.merge import merge


@dataclass(frozen=True)
class SaveRequest:
    """A checked ``save``: the real directory, the session's fields, how to write them."""

    dir: str
    session: SessionInput
    replace: bool = False


def save_request(req: Save, *, now: dt.datetime | None = None) -> SaveRequest:
    """``save``'s params checked: the directory first, then every field of the session.

    ``save`` must not create anything: a missing directory is ``not_found``, naming it.
    """

    def missing(given: str) -> NotFound:
        return NotFound(f"memory directory not found at {given}", {"field": "dir"})

    directory = p.directory(req.dir, missing=missing)
    given = {name: getattr(req, name) for name in SESSION_FIELDS}
    fields = {k: list(v) if isinstance(v, tuple) else v for k, v in given.items()}
    return SaveRequest(directory, validate_save_params(fields, now=now), req.replace)


def parse_save(params: Mapping[str, Any], *, now: dt.datetime | None = None) -> SaveRequest:
    """:func:`save_request` of wire params (the in-process callers')."""
    return save_request(decode(Save, params), now=now)


def write_atomic(path: str, text: str, mode: int = 0o644) -> None:
    """Replace ``path`` with ``text`` in one rename; the file gets ``mode`` exactly.

    Session memories are the user's files (0644, like the agent's own);
    memoryd's private files (reports) pass 0600.
    """
    directory = os.path.dirname(path)
    # The pid in the name lets a later start-up tell a dead writer's leftover
    # from a file another live process is writing right now.
    prefix = f".{os.path.basename(path)}.{os.getpid()}."
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=TEMP_SUFFIX, dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


TEMP_SUFFIX = ".tmp"
_TEMP_NAME = re.compile(r"^\..+\.(md|json)\.(?:(\d+)\.)?[a-z0-9_]{8}\.tmp$")
_UNNAMED_TEMP_AGE_S = 60.0
"""Temp files from before names carried a pid are removed only once this old."""


def remove_stale_temp_files(directories: Sequence[str]) -> int:
    """Delete :func:`write_atomic` temp files whose writer is gone; how many were removed.

    A ``kill -9`` between the temp file's creation and its rename leaves
    ``.<name>.<pid>.<random>.tmp`` behind. Hidden and symlinked directories
    are skipped, as the scanner does; only names of exactly that shape are
    touched, and only when their pid no longer runs.
    """
    removed = 0
    now = time.time()
    for top in directories:
        for directory, subdirs, files in os.walk(top):
            subdirs[:] = [d for d in subdirs if not d.startswith(".")]
            for name in files:
                match = _TEMP_NAME.match(name)
                path = os.path.join(directory, name)
                if match is None or not _writer_gone(match.group(2), path, now):
                    continue
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
                    removed += 1
    return removed


def _writer_gone(pid: str | None, path: str, now: float) -> bool:
    if pid is not None:
        return int(pid) != os.getpid() and not process_alive(int(pid))
    try:
        return now - os.lstat(path).st_mtime > _UNNAMED_TEMP_AGE_S
    except OSError:
        return False


def save(request: SaveRequest) -> SaveResult:
    """Write ``{dir}/{session}-{project}.md``, over an earlier save of it; where and how.

    An earlier save of the same session is merged with this one (see
    :mod:`memoryd.sessions.merge`) unless the request says ``replace``. A
    session path holding something other than a regular file (a FIFO, a
    directory, a device, a symbolic link) is ``not_a_file`` and is left as it
    is; a write the disk refuses (full, read-only) is ``unwritable``, and the
    temp file is removed, so nothing half-written remains.

    Saves into one folder take turns (:mod:`memoryd.sessions._save_lock`), in
    this process and across processes, so each merges into the file the one
    before it wrote: no acknowledged save is lost to a concurrent one. The
    file is on disk (fsync'd, renamed, the folder fsync'd) before this returns.
    """
    try:
        lock = _save_lock.acquire(request.dir)
    except OSError as exc:
        raise unwritable(_save_lock.lock_path(request.dir), exc, doing="lock") from None
    with lock:
        return _save_locked(request)


def _save_locked(request: SaveRequest) -> SaveResult:
    """:func:`save` with the folder's save lock held: read, merge, write, rename."""
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
        "migrated_from": _migrated_from(previous),
        "schema_version": SCHEMA_VERSION,
        "bytes": len(text.encode()),
    }


def _previous_session(path: str, *, merging: bool) -> tuple[Mapping[str, object] | None, bytes]:
    """The fields (None when they do not parse) and bytes of the session file ``save`` replaces.

    A file over the read cap cannot be merged into without dropping its end:
    that save is refused (``replace`` still overwrites it).
    """
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


def unwritable(path: str, exc: OSError, *, doing: str = "write") -> Unwritable:
    """The ``unwritable`` error for a failed write: the cause by name (``ENOSPC``) and in words."""
    name = errno.errorcode.get(exc.errno or 0, "error")
    return Unwritable(
        f"cannot {doing} {path}: {exc.strerror or exc} ({name}); nothing was written",
        {"path": path, "errno": name},
    )


def _migrated_from(previous: Mapping[str, Any] | None) -> str | None:
    """The schema an overwritten file was upgraded from; None for a new or current file."""
    version = None if previous is None else str(previous.get("schema_version", "1.0"))
    return None if version == SCHEMA_VERSION else version


def load_last(
    conn: sqlite3.Connection,
    directory: str,
    project: str,
    *,
    now: dt.datetime | None = None,
    reveal_secrets: bool = False,
) -> LoadLastReply:
    """The newest readable session memory for ``project`` in ``directory``, from the index.

    A session stamped more than a day after ``now`` is skipped, said why, like
    an unreadable one: it must not pass for the newest session.
    Credentials in the file are redacted in ``content`` and ``fields`` unless
    ``reveal_secrets`` asks for the file exactly as it is on disk.
    """
    rows = conn.execute(
        "SELECT path, filename, session, error FROM files WHERE directory = ? "
        "AND kind = 'session' AND project = ? ORDER BY session DESC, filename DESC",
        (directory, project),
    ).fetchall()
    skipped: list[SkippedSession] = []
    current = now or dt.datetime.now().astimezone()
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
        extra = {"truncated": True, "warning": _over_cap(path)} if truncated else {}
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
    why_unreadable: Callable[[str], str | None] = lambda d: None,
    caches: SessionCaches | None = None,
) -> ContextReply:
    """The cited prior-session brief for ``task`` over the sessions in ``directories``.

    Texts read and sessions parsed are kept in ``caches`` for the next call
    (a fresh, short-lived set when None). ``why_unreadable`` names why a
    directory cannot be read (None when it can): such a history makes the
    brief "unavailable" rather than silently empty.
    """
    caches = SessionCaches() if caches is None else caches
    scope_dirs = ", ".join(directories)
    scope = f"project '{project}' in {scope_dirs}" if project else scope_dirs
    for directory in directories:
        reason = why_unreadable(directory)
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
        sql = (
            "SELECT path, filename, project, session, error, content_hash FROM files "
            "WHERE directory = ? AND kind = 'session'"
        )
        args: tuple[Any, ...] = (directory,)
        if project:
            sql += " AND project = ?"
            args += (project,)
        rows = conn.execute(sql + " ORDER BY session", args)
        for path, filename, proj, session, indexed_error, digest in rows:
            error = indexed_error or session_stamp_problem(session)
            body, reason = caches.texts.read(path, digest) if error is None else (None, None)
            docs.append(
                SessionDoc(
                    path=path,
                    filename=filename,
                    project=proj,
                    session=session,
                    text=body,
                    error=error or reason,
                )
            )
    brief = build_brief(
        task, docs, scope=scope, budget_tokens=budget_tokens, parsed=caches.parsed
    ).to_json()
    if project and not docs:
        # A mistyped project looks like "nothing useful"; naming what exists shows the slip.
        known = _projects_in(conn, directories)
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


def _projects_in(conn: sqlite3.Connection, directories: Sequence[str]) -> list[str]:
    """The projects that have session memories in ``directories``, by name."""
    marks = ", ".join("?" for _ in directories)
    rows = conn.execute(
        f"SELECT DISTINCT project FROM files WHERE kind = 'session' AND directory IN ({marks}) "
        "AND project IS NOT NULL ORDER BY project",
        tuple(directories),
    )
    return [r[0] for r in rows]


TEXT_CACHE_BYTES = 4 * 1024 * 1024


class SessionTexts:
    """Redacted session texts keyed by path and the content hash the index holds.

    ``context`` reads every session of a project; with this, a call opens only the
    files whose indexed hash it has not seen (opening, reading and redacting
    unchanged files was half a repeated ``context``'s time). A text is kept only
    when its bytes hash to the indexed value, so a file that changed ahead of the
    index is read again next time rather than cached under the old hash.
    """

    def __init__(self, budget: int = TEXT_CACHE_BYTES) -> None:
        self._cache: SizedCache[tuple[str, str], str] = SizedCache(budget)

    def read(self, path: str, digest: str) -> tuple[str | None, str | None]:
        """``(text, None)``, newlines translated as text mode does, secrets redacted; or why not.

        At most the first MiB is read: the brief of a bigger file is built from that.
        """
        text = self._cache.get((path, digest))
        if text is not None:
            return text, None
        try:
            data, truncated = read_capped(path, follow=False)
            decoded = data.decode("utf-8", errors="ignore" if truncated else "strict")
        except OSError as exc:
            return None, describe_os_error(exc, path)
        except UnicodeDecodeError as exc:
            return None, f"not valid UTF-8 at offset {exc.start}"
        text = redact(decoded.replace("\r\n", "\n").replace("\r", "\n"))
        if content_hash(data) == digest:
            self._cache.put((path, digest), text, len(text) + 100)
        return text, None


@dataclass(frozen=True)
class SessionCaches:
    """What ``context`` keeps between calls, owned by the service that answers them."""

    texts: SessionTexts = field(default_factory=SessionTexts)
    parsed: ParsedSessions = field(default_factory=ParsedSessions)


def _over_cap(path: str) -> str:
    name, cap = os.path.basename(path), MAX_READ_BYTES // 1024
    return f"{name} is over the {cap} KiB cap: only its start is shown"


def dir_unreadable(directory: str) -> str | None:
    """Why the session history in ``directory`` cannot be read, or None."""
    if not os.access(directory, os.R_OK | os.X_OK):
        return "permission denied"
    return None
