"""Pull the paths a memory cites into the code out of its text, cheaply and without guessing.

Citations are relative paths with a directory part (``src/tax.py:42``), a bare
file name with a source extension inside backticks, a directory, or a Markdown
link's target (not a URL or a sibling memory). URLs, hosts, globs, absolute,
home- or parent-relative paths and variables are not. The ``citations`` rows
are written with the memory's ``files`` row (:func:`replace_citations`).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

from memoryd.indexer.records import KIND_MEMORY

KIND_FILE = "file"
KIND_DIR = "dir"
KIND_NAME = "name"
"""A bare file name: looked up by basename anywhere in the checkout."""

MAX_CITATIONS = 50
"""Per memory; a pasted file listing should not cost hundreds of checks."""

SOURCE_EXTENSIONS = frozenset(
    """
    py pyi ipynb js jsx ts tsx mjs cjs vue svelte rs go java kt kts scala swift m mm c h cc cpp
    hpp cs fs rb php pl lua r jl ex exs erl hs ml clj dart zig nim sh bash zsh fish ps1 bat sql
    tf tfvars hcl yaml yml json jsonc json5 toml ini cfg conf env lock xml html htm css scss sass
    less md mdx rst txt csv tsv proto graphql gql gradle properties mk cmake dockerfile nix
    example sample template dist tmpl j2
    """.split()  # noqa: SIM905 - a word list reads better than 90 quoted strings
)

# Every pattern here is linear in the text: a match starts only where the previous
# character cannot continue it, and runs are possessive.
_SEGMENT_CHARS = r"[A-Za-z0-9_@+.-]"
_SEGMENT = _SEGMENT_CHARS + "++"
# A path with at least one directory part, optionally ending in a slash.
_PATH = re.compile(
    rf"(?<![\w/.:@~$%+-])(?P<path>\.?{_SEGMENT}(?:/{_SEGMENT})+/?|\.?{_SEGMENT}/)"
    r"(?::(?P<line>\d+)(?:-\d+)?)?"
)
_BACKTICK = re.compile(r"`([^`\n]{1,300})`")
MARKDOWN_LINK = re.compile(
    r"\[[^\[\]\n]*+\]\(\s*+<?([^()\[\]\s<>]++)>?(?:\s++\"[^\"\n]*+\")?\s*+\)"
)
"""``[text](target "title")``, the target in group 1 (no bracket inside either)."""
_BARE = re.compile(rf"^(?P<path>{_SEGMENT_CHARS}+\.[A-Za-z0-9]+)(?::(?P<line>\d+)(?:-\d+)?)?$")
_HOST_TLD = re.compile(r"\.(com|org|net|io|dev|app|co|edu|gov|uk|de|ai|cloud|local|internal)$")


@dataclass(frozen=True, slots=True)
class Citation:
    """One place in the checkout a memory points at."""

    target: str
    kind: str
    line: int | None = None


def extract(description: str | None, body: str | None) -> list[Citation]:
    """The distinct citations in a memory's description and body, in order of appearance."""
    text = f"{description or ''}\n{body or ''}"
    found: dict[str, Citation] = {}

    def add(raw: str, line: str | None, *, quoted: bool) -> None:
        citation = _classify(raw, line, quoted=quoted)
        if citation is not None and citation.target not in found:
            found[citation.target] = citation

    # Each pass runs only when its text can hold a match.
    for match in MARKDOWN_LINK.finditer(text) if "](" in text else ():
        target = match.group(1).split("#", 1)[0]
        if target and not (target.endswith(".md") and "/" not in target):
            add(target, None, quoted=True)
    for match in _BACKTICK.finditer(text) if "`" in text else ():
        inner = match.group(1).strip()
        bare = _BARE.match(inner)
        if bare is not None:
            add(bare.group("path"), bare.group("line"), quoted=True)
        elif " " not in inner and "/" in inner:
            add(inner.rstrip(":"), None, quoted=True)
    for match in _PATH.finditer(text) if "/" in text else ():
        add(match.group("path"), match.group("line"), quoted=False)
    return list(found.values())[:MAX_CITATIONS]


def _classify(raw: str, line: str | None, *, quoted: bool) -> Citation | None:
    """A citation for ``raw`` or None when it does not point into a checkout."""
    path = raw.strip().strip("'\"").rstrip(".,;)")
    if ":" in path:
        path, _, rest = path.partition(":")
        digits = re.match(r"\d+", rest)
        line = line or (digits.group() if digits else None)
    if not path or _outside_checkout(path):
        return None
    if path.startswith("./"):
        path = path[2:]
    is_dir = path.endswith("/")
    path = path.rstrip("/")
    if not path:
        return None
    last = path.rsplit("/", 1)[-1]
    extension = last.rsplit(".", 1)[-1].lower() if "." in last.lstrip(".") else ""
    number = int(line) if line else None
    if "/" not in path:
        if is_dir:
            return Citation(path, KIND_DIR) if quoted else None
        if quoted and extension in SOURCE_EXTENSIONS:
            return Citation(path, KIND_NAME, number)
        return None
    if is_dir:
        return Citation(path, KIND_DIR)
    if extension in SOURCE_EXTENSIONS or last in {"Makefile", "Dockerfile", "Justfile"}:
        return Citation(path, KIND_FILE, number)
    if not extension and quoted:
        return Citation(path, KIND_DIR)
    return None


def _outside_checkout(path: str) -> bool:
    """URLs, host names, globs, absolute, home- or parent-relative paths and variables."""
    if "://" in path or path.startswith(("/", "~", "$", "../", "www.", "mailto:", "@")):
        return True
    if any(ch in path for ch in "*?[]{}<>|\\=,"):
        return True
    first = path.split("/", 1)[0]
    return bool(_HOST_TLD.search(first)) or (
        "/" in path
        and "." in first.lstrip(".")
        and first.rsplit(".", 1)[-1].lower() not in SOURCE_EXTENSIONS
    )


def replace_citations(
    conn: sqlite3.Connection,
    rows: Iterable[tuple[str, str, str | None, str | None]],
    *,
    fresh: bool = False,
) -> None:
    """Extract the citations of ``(path, kind, description, body)`` rows being written, in
    place of those stored (``fresh``: rows that have none stored yet)."""
    batch = list(rows)
    if not fresh:
        conn.executemany("DELETE FROM citations WHERE path = ?", [(r[0],) for r in batch])
    conn.executemany(
        "INSERT INTO citations(path, target, kind, line) VALUES (?, ?, ?, ?)",
        [
            (path, c.target, c.kind, c.line)
            for path, kind, description, body in batch
            if kind == KIND_MEMORY
            for c in extract(description, body)
        ],
    )
