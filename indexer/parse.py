"""Turn one file on disk into a :class:`ParsedFile`, never raising.

Whatever the bytes are, the result is a record, with ``error`` set when the
file cannot be used. A file over the size cap is read only as far as its head.
"""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import Mapping
from typing import Any

from memoryd.bounded_read import MAX_READ_BYTES, NotAFile, OutsideFolder, open_memory, read_fd
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


def read_head(path: str, size_hint: int, within: str | None = None) -> tuple[bytes, bool]:
    """``(data, truncated)``: the whole file, or its head when over the cap; raises OSError
    (a symlink is followed only to a file inside ``within``)."""
    big = size_hint > MAX_FILE_BYTES
    fd = open_memory(path, within)
    try:
        if not big:  # the size the stat saw plus one byte: most files end there, in one read
            data = os.read(fd, size_hint + 1)
            if len(data) == size_hint:
                return data, False
            os.lseek(fd, 0, os.SEEK_SET)
        data, more = read_fd(fd, HEAD_BYTES if big else MAX_FILE_BYTES)
    finally:
        os.close(fd)
    return (data[:HEAD_BYTES], True) if more or big else (data, False)


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
    """Read and parse ``path`` (links followed only inside ``within``); every failure
    becomes ``error`` on the record."""
    kind = classify(filename)
    try:
        data, truncated = read_head(path, size_hint, within)
    except OSError as exc:
        return ParsedFile(
            kind=kind, content_hash="", error=describe_os_error(exc, path), error_kind=ERROR_READ
        )
    return parse_bytes(data, kind, truncated=truncated, size=max(size_hint, len(data)))


def parse_bytes(data: bytes, kind: str, *, truncated: bool = False, size: int = 0) -> ParsedFile:
    """Parse file content already in memory; any exception becomes the file's error."""
    digest = hashlib.blake2b(data, digest_size=16).hexdigest()
    try:
        return _parse_data(data, kind, digest, truncated=truncated, size=size)
    except Exception as exc:
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
    """Cut a ``name`` or ``description`` over :data:`MAX_FIELD_CHARS`, with a marker and
    a warning; a credential is redacted first, so the cut cannot leave part of one."""
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
    """A memory's header, flat or with Claude Code's nested ``metadata:``.

    As in Claude Code, a nested ``type`` wins over a flat one; ``name`` and
    ``description`` are read from the top first.
    """
    nested = fields.get("metadata")
    meta: Mapping[str, object] = nested if isinstance(nested, dict) else {}

    def field(key: str, *, nested_first: bool = False) -> tuple[bool, object, str]:
        order = [(meta, f"metadata.{key}"), (fields, key)]
        for source, where in order if nested_first else order[::-1]:
            if key in source and source[key] is not None:
                return True, source[key], where
        return key in fields or key in meta, None, key

    has_description, description, where = field("description")
    _, name, name_at = field("name")
    _, mtype, type_at = field("type", nested_first=True)
    if not has_description:
        problem = "frontmatter has no 'description'"
    elif not isinstance(description, str):
        got = "nothing" if description is None else type(description).__name__
        problem = f"'{where}' must be a string, got {got}"
    elif not description.strip():
        problem = f"'{where}' is empty"
    elif name is not None and not isinstance(name, str):
        problem = f"'{name_at}' must be a string, got {type(name).__name__}"
    elif mtype is not None and mtype not in MEMORY_TYPES:
        problem = f"invalid {type_at} {mtype!r} (expected one of {', '.join(MEMORY_TYPES)})"
    else:
        return ParsedFile(
            kind=KIND_MEMORY,
            content_hash=digest,
            name=name.strip() if isinstance(name, str) and name else None,
            description=" ".join(description.split()),
            type=None if mtype is None else str(mtype),
            body=body,
            meta=_header_facts(fields, meta),
        )
    return _failed(KIND_MEMORY, digest, problem)


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
    """``{"header": {...}}``: the :data:`MEMORY_HEADER_KEYS` the header holds, bounded."""
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
    """``value`` with string keys and lists only (the loader builds no dates)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value
