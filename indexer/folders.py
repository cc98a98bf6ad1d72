"""Whether a folder is a memory folder, and what to say when one gives no memory.

A memory folder directly holds ``MEMORY.md`` or a ``*.md`` file opening with a
``---`` header (a checkout's README does not make one).
"""

from __future__ import annotations

import os

from memoryd.bounded_read import open_regular
from memoryd.indexer.records import INDEX_FILENAME
from memoryd.indexer.scanner import is_memory_filename, is_skipped_dir

SUBFOLDERS_NAMED = 5
"""How many subfolders holding memories a note names."""
HEADERS_PROBED = 64
"""How many ``*.md`` files of a folder are opened to look for a header, at most."""


def is_memory_folder(path: str) -> bool:
    """True when ``path`` directly holds ``MEMORY.md`` or a ``*.md`` file with a header
    (regular files only; at most :data:`HEADERS_PROBED` opened)."""
    entries = _memory_files(path)
    if any(e.name == INDEX_FILENAME for e in entries):
        return True
    return any(_opens_with_header(e.path) for e in entries[:HEADERS_PROBED])


def _memory_files(path: str, links: bool = False) -> list[os.DirEntry[str]]:
    """The ``*.md`` files directly in ``path``, links to files too if asked (none when it
    cannot be read)."""
    try:
        with os.scandir(path) as it:
            return [
                e for e in it if is_memory_filename(e.name) and e.is_file(follow_symlinks=links)
            ]
    except OSError:
        return []


def _opens_with_header(path: str) -> bool:
    """The file's first line is ``---`` (after a BOM), as a memory's header opens."""
    try:
        fd = open_regular(path, follow=False)
    except OSError:
        return False
    try:
        head = os.read(fd, 8).removeprefix(b"\xef\xbb\xbf")
    except OSError:
        return False
    finally:
        os.close(fd)
    return head.startswith(b"---") and head[3:4] in (b"\n", b"\r", b" ", b"\t")


def memory_subfolders(path: str) -> list[str]:
    """Names of ``path``'s direct subfolders that hold memory files, sorted, a few at most."""
    try:
        with os.scandir(path) as entries:
            dirs = sorted(
                e.name
                for e in entries
                if e.is_dir(follow_symlinks=False) and not is_skipped_dir(e.name, e.path)
            )
    except OSError:
        return []
    return [d for d in dirs if is_memory_folder(os.path.join(path, d))][:SUBFOLDERS_NAMED]


def empty_folder_note(directory: str) -> str:
    """Why a folder with no valid memory gave nothing, naming likelier folders."""
    count = len(_memory_files(directory, links=True))
    if count and is_memory_folder(directory):
        return (
            f"no valid memories in {directory} ({count} file(s): an index, sessions or "
            f"files with errors; `memoryd list {directory}` shows which)"
        )
    subfolders = memory_subfolders(directory)
    if not subfolders:
        if count:
            return (
                f"no memories in {directory}: none of its {count} *.md file(s) opens with a "
                "'---' header as memory files do, and it holds no MEMORY.md"
            )
        return f"no memories in {directory} (0 files)"
    guess = os.path.join(directory, subfolders[0])
    return (
        f"{directory} holds no memory files; did you mean {guess}? "
        f"(subfolders with memory files: {', '.join(subfolders)})"
    )
