"""What a folder holds, cheaply: whether it is a memory folder, and which subfolders are.

Used before anything is indexed: the daemon watches a folder named only by a
request when it is a memory folder itself (:func:`is_memory_folder`: a
``MEMORY.md``, or a ``*.md`` file that opens with a ``---`` header, directly
in it; a checkout's README does not make one), and an empty answer from a
folder says what was searched (``did you mean DIR/memory?``) instead of
looking like "nothing relevant".
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


def memory_file_count(path: str) -> int:
    """``*.md`` files directly in ``path`` (0 when it cannot be read)."""
    try:
        with os.scandir(path) as entries:
            return sum(1 for e in entries if is_memory_filename(e.name) and e.is_file())
    except OSError:
        return 0


def is_memory_folder(path: str) -> bool:
    """True when ``path`` directly holds ``MEMORY.md`` or a ``*.md`` file with a header.

    Only regular files count (no links, no FIFOs); at most
    :data:`HEADERS_PROBED` files are opened, for their first bytes.
    """
    try:
        with os.scandir(path) as it:
            entries = [e for e in it if is_memory_filename(e.name) and _regular(e)]
    except OSError:
        return False
    if any(e.name == INDEX_FILENAME for e in entries):
        return True
    return any(_opens_with_header(e.path) for e in entries[:HEADERS_PROBED])


def _regular(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file(follow_symlinks=False)
    except OSError:
        return False


def _opens_with_header(path: str) -> bool:
    """The file's first line is ``---`` (after a BOM): a front matter header, as memories open."""
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
    count = memory_file_count(directory)
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
