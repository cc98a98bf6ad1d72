"""Turn one file on disk into a :class:`ParsedFile`, never raising.

The parser is total: whatever the bytes are, it returns a record, with
``error`` set when the file cannot be used. Files over the size cap are read
only as far as their header needs, so a stray multi-gigabyte log named
``notes.md`` costs one bounded read.
"""

from __future__ import annotations

import datetime as dt
import errno
import hashlib
import os
from collections.abc import Mapping
from typing import Any

from memoryd.bounded_read import MAX_READ_BYTES, NotAFile, OutsideFolder, open_memory
from memoryd.indexer.frontmatter import FrontmatterError, load_header, split
from memoryd.indexer.records import (
    ERROR_PARSE,
    ERROR_READ,
    INDEX_FILENAME,
    KIND_INDEX,
    KIND_MEMORY,
    KIND_SESSION,
    MEMORY_TYPES,
    ParsedFile,
    unexpected,
)
from memoryd.indexer.secrets import find_secrets, redact
from memoryd.paths import SESSION_FILENAME, escaped

MAX_FILE_BYTES = MAX_READ_BYTES
"""Files larger than this are not read whole."""

HEAD_BYTES = 64 * 1024
"""How much of an oversized file is read: enough for any sane header."""


SESSION_KEYS = (
    "schema_version",
    "project-name",
    "session",
    "mode",
    "status",
    "last-checkpoint",
    "checkpoints-approved",
    "checkpoint_decisions",
    "target-dir",
    "last_session_at",
)


def classify(filename: str) -> str:
    """``index`` for MEMORY.md, ``session`` for timestamped session files, else ``memory``."""
    if filename == INDEX_FILENAME:
        return KIND_INDEX
    if SESSION_FILENAME.match(filename):
        return KIND_SESSION
    return KIND_MEMORY


def content_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def read_head(path: str, size_hint: int, within: str | None = None) -> tuple[bytes, bool]:
    """``(data, truncated)``: the whole file, or only its head when it is over the cap.

    Raises OSError for unreadable files. Opened through
    :func:`~memoryd.bounded_read.open_memory`: a link only to a file inside
    ``within``, and a FIFO or a link swapped in after the stat is not read.
    """
    fd = open_memory(path, within)
    try:
        if size_hint > MAX_FILE_BYTES:
            return _read_up_to(fd, HEAD_BYTES), True
        # Ask for the size the stat saw (plus one byte, to notice growth): a read
        # of the cap would allocate a 1 MiB buffer for every few-KiB memory.
        data = _read_up_to(fd, size_hint + 1, expected=size_hint)
        if len(data) > size_hint:  # grew since the stat: read on up to the cap
            data += _read_up_to(fd, MAX_FILE_BYTES + 1 - len(data))
        if len(data) <= MAX_FILE_BYTES:
            return data, False
        return data[:HEAD_BYTES], True
    finally:
        os.close(fd)


def _read_up_to(fd: int, count: int, expected: int | None = None) -> bytes:
    """``count`` bytes from ``fd``, fewer only at the end of the file.

    A read that returns ``expected`` bytes is taken as the end of the file
    (what the stat said), saving the extra read that would only confirm it.
    """
    data = os.read(fd, count)
    while 0 < len(data) < count and len(data) != expected:
        more = os.read(fd, count - len(data))
        if not more:
            break
        data += more
    return data


def describe_os_error(exc: OSError, path: str) -> str:
    """A one-line reason for a failed stat/open, naming symlink problems precisely."""
    if isinstance(exc, OutsideFolder):
        return f"not read: the file opened was {escaped(exc.opened)!r}, outside its root"
    if isinstance(exc, NotAFile) and exc.errno == errno.ELOOP:
        return _link_problem(path)
    if isinstance(exc, NotAFile):
        return f"not a regular file: it is {exc.what}"
    if exc.errno == errno.EACCES:
        return "unreadable: permission denied"
    if exc.errno == errno.ELOOP:
        return "symlink loop: the link resolves to itself"
    if exc.errno == errno.ENOENT and os.path.islink(path):
        return f"broken symlink: target {escaped(os.readlink(path))!r} does not exist"
    if exc.errno == errno.EISDIR:
        return "not a regular file: it is a directory"
    return f"unreadable: {exc.strerror or exc}"


def _link_problem(path: str) -> str:
    """Why a symbolic link at a memory's path was not read: broken, a loop, or a link at all."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ELOOP):
            return describe_os_error(exc, path)
    try:
        target = escaped(os.readlink(path))
    except OSError:
        target = "?"
    return f"symlink (to {target!r}) not followed: no root to keep it inside"


def parse_file(path: str, filename: str, size_hint: int, within: str | None = None) -> ParsedFile:
    """Read and parse ``path``; every failure becomes ``error`` on the record.

    ``within`` is the real path of the root: a symbolic link is followed only
    to a file inside it, and not at all without it.
    """
    kind = classify(filename)
    try:
        data, truncated = read_head(path, size_hint, within)
    except OSError as exc:
        return ParsedFile(
            kind=kind, content_hash="", error=describe_os_error(exc, path), error_kind=ERROR_READ
        )
    return parse_bytes(data, kind, truncated=truncated, size=max(size_hint, len(data)))


def parse_bytes(data: bytes, kind: str, *, truncated: bool = False, size: int = 0) -> ParsedFile:
    """Parse file content already in memory (also used by ``save`` to validate output).

    Any exception, foreseen or not, becomes this file's error, so one file can
    never stop the files after it.
    """
    digest = content_hash(data)
    try:
        return _parse_data(data, kind, digest, truncated=truncated, size=size)
    except Exception as exc:  # a bug's or a library's surprise: this file's error, not ours
        return _failed(kind, digest, unexpected("could not parse the file", exc))


def _parse_data(data: bytes, kind: str, digest: str, *, truncated: bool, size: int) -> ParsedFile:
    nul = data.find(b"\x00")
    if nul >= 0:
        return _failed(kind, digest, f"binary file: contains a NUL byte at offset {nul}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if truncated and exc.end == len(data) and exc.reason == "unexpected end of data":
            # A multi-byte character cut at the end of the head; that is fine.
            text = data[: exc.start].decode("utf-8")
        else:
            bad = data[exc.start]
            return _failed(kind, digest, f"not valid UTF-8: byte 0x{bad:02x} at offset {exc.start}")
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    record = _parse_text(text, kind, digest)
    record.secrets = find_secrets(text)
    _cap_fields(record)
    if truncated and record.error is None:
        _warn(
            record,
            f"file is {size:,} bytes, over the {MAX_FILE_BYTES // 1024} KiB cap: "
            f"only its first {HEAD_BYTES // 1024} KiB were read",
        )
    return record


MAX_FIELD_CHARS = 1000
"""The longest ``name`` or ``description`` kept; the rest is cut, with a marker."""


def _cap_fields(record: ParsedFile) -> None:
    """Cut a ``name`` or ``description`` over :data:`MAX_FIELD_CHARS`, visibly.

    Cut once, at parse time, so the index, the rankers and every reply see the
    same bounded value. It ends in ``… [cut: N characters]`` and the file gets a
    warning. A file holding a credential is redacted before the cut, so the cut
    cannot leave part of a value that no pattern then finds.
    """
    for field in ("name", "description"):
        value = getattr(record, field)
        if value is None or len(value) <= MAX_FIELD_CHARS:
            continue
        if record.secrets:
            value = redact(value)
            if len(value) <= MAX_FIELD_CHARS:
                setattr(record, field, value)
                continue
        setattr(record, field, f"{value[:MAX_FIELD_CHARS]}… [cut: {len(value):,} characters]")
        _warn(
            record,
            f"the {field} is {len(value):,} characters: only its first "
            f"{MAX_FIELD_CHARS:,} are kept (put the detail in the body)",
        )


def _warn(record: ParsedFile, warning: str) -> None:
    """Add ``warning`` to a usable record's warnings (an error says enough)."""
    if record.error is None:
        record.warning = warning if record.warning is None else f"{warning}; {record.warning}"


def _failed(kind: str, digest: str, message: str) -> ParsedFile:
    return ParsedFile(kind=kind, content_hash=digest, error=message, error_kind=ERROR_PARSE)


def _parse_text(text: str, kind: str, digest: str) -> ParsedFile:
    if kind == KIND_INDEX:
        # MEMORY.md is a plain Markdown list; frontmatter is optional.
        entries = sum(1 for line in text.splitlines() if line.lstrip().startswith(("- [", "* [")))
        lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        summary = f"memory index: {entries} entries in {lines} lines"
        return ParsedFile(
            kind=kind, content_hash=digest, name="MEMORY", description=summary, body=text
        )
    try:
        yaml_text, body = split(text)
        fields, lenient = load_header(yaml_text)
    except FrontmatterError as exc:
        return _failed(kind, digest, str(exc))
    record = (_session if kind == KIND_SESSION else _memory)(fields, body, digest)
    if record.error is None:
        record.warning = lenient
    return record


def _memory(fields: Mapping[str, object], body: str, digest: str) -> ParsedFile:
    """A memory's header in either shape: flat, or Claude Code 2.1's nested ``metadata:``.

    Claude Code writes ``name`` and ``description`` at the top and ``type``
    under ``metadata:`` (with keys of its own such as ``originSessionId``);
    folders mix that with the flat ``type:``. As in Claude Code, a nested key
    wins over a flat one for ``type``; ``name`` and ``description`` are read
    from the top first. Other keys, at either level, are left alone.
    """
    nested = fields.get("metadata")
    meta: Mapping[str, object] = nested if isinstance(nested, dict) else {}

    def field(key: str, *, nested_first: bool = False) -> tuple[bool, object, str]:
        """(present, value, where) for ``key``; where is ``'metadata.key'`` when nested."""
        order = [(meta, f"metadata.{key}"), (fields, key)]
        for source, where in order if nested_first else order[::-1]:
            if key in source and source[key] is not None:
                return True, source[key], where
        return key in fields or key in meta, None, key

    has_description, description, where = field("description")
    if not has_description:
        return _failed(KIND_MEMORY, digest, "frontmatter has no 'description'")
    if not isinstance(description, str):
        got = "nothing" if description is None else type(description).__name__
        return _failed(KIND_MEMORY, digest, f"'{where}' must be a string, got {got}")
    if not description.strip():
        return _failed(KIND_MEMORY, digest, f"'{where}' is empty")
    _, name, where = field("name")
    if name is not None and not isinstance(name, str):
        return _failed(
            KIND_MEMORY, digest, f"'{where}' must be a string, got {type(name).__name__}"
        )
    _, mtype, where = field("type", nested_first=True)
    if mtype is not None and mtype not in MEMORY_TYPES:
        return _failed(
            KIND_MEMORY,
            digest,
            f"invalid {where} {mtype!r} (expected one of {', '.join(MEMORY_TYPES)})",
        )
    return ParsedFile(
        kind=KIND_MEMORY,
        content_hash=digest,
        name=name.strip() if name else None,
        description=" ".join(description.split()),
        type=None if mtype is None else str(mtype),
        body=body,
        meta=_header_facts(fields, nested if isinstance(nested, dict) else {}),
    )


MEMORY_HEADER_KEYS = (
    *("related", "see_also", "links", "status", "superseded_by", "replaced_by", "supersedes"),
    "replaces",
    *("created", "updated", "date", "last_updated", "last_verified", "valid_until", "expires"),
)
"""Header keys of a memory that the ranker reads (links to neighbours, status, dates)."""
_HEADER_VALUES_KEPT = 50
_HEADER_TEXT_KEPT = 300


def _header_facts(
    fields: Mapping[str, object], nested: Mapping[str, object]
) -> dict[str, dict[str, str | list[str]]]:
    """``{"header": {...}}`` with the :data:`MEMORY_HEADER_KEYS` a memory's header holds.

    Kept under one key of the row's ``meta`` (never as a top-level ``status``,
    which is a session's column), bounded in count and length.
    """
    found: dict[str, str | list[str]] = {}
    for key in MEMORY_HEADER_KEYS:
        value = fields.get(key, nested.get(key))
        if value is None or isinstance(value, dict):
            continue
        values = value if isinstance(value, list) else [value]
        kept = [str(_jsonable(v))[:_HEADER_TEXT_KEPT] for v in values[:_HEADER_VALUES_KEPT]]
        found[key] = kept if isinstance(value, list) else kept[0]
    return {"header": found} if found else {}


def _session(fields: Mapping[str, object], body: str, digest: str) -> ParsedFile:
    meta = {key: _jsonable(fields[key]) for key in SESSION_KEYS if key in fields}
    meta["schema_version"] = str(fields.get("schema_version", "1.0"))
    summary = _first_paragraph(body, "## Session summary")
    return ParsedFile(
        kind=KIND_SESSION,
        content_hash=digest,
        name=str(meta.get("project-name") or ""),
        description=summary,
        type=None,
        body=body,
        meta=meta,
    )


def _first_paragraph(body: str, heading: str) -> str | None:
    start = body.find(heading)
    if start < 0:
        return None
    rest = body[start + len(heading) :].lstrip("\n")
    end = rest.find("\n\n")
    para = rest if end < 0 else rest[:end]
    para = para.split("\n## ", 1)[0]
    return " ".join(para.split()) or None


def _jsonable(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value
