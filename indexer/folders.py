"""What a folder holds, cheaply: whether it is a memory folder, and which subfolders are.

Used before anything is indexed: the daemon watches a folder named only by a
request when it holds memory files itself, and an empty answer from such a
folder says what was searched (``did you mean DIR/memory?``) instead of
looking like "nothing relevant".
"""

from __future__ import annotations

import os

from memoryd.indexer.scanner import is_memory_filename

SUBFOLDERS_NAMED = 5
"""How many subfolders holding memories a note names."""


def memory_file_count(path: str) -> int:
    """``*.md`` files directly in ``path`` (0 when it cannot be read)."""
    try:
        with os.scandir(path) as entries:
            return sum(1 for e in entries if is_memory_filename(e.name) and e.is_file())
    except OSError:
        return 0


def holds_memory_files(path: str) -> bool:
    return memory_file_count(path) > 0


def memory_subfolders(path: str) -> list[str]:
    """Names of ``path``'s direct subfolders that hold memory files, sorted, a few at most."""
    try:
        with os.scandir(path) as entries:
            dirs = sorted(
                e.name
                for e in entries
                if e.is_dir(follow_symlinks=False) and not e.name.startswith(".")
            )
    except OSError:
        return []
    return [d for d in dirs if holds_memory_files(os.path.join(path, d))][:SUBFOLDERS_NAMED]


def empty_folder_note(directory: str) -> str:
    """Why a folder with no valid memory gave nothing, naming likelier folders."""
    count = memory_file_count(directory)
    if count:
        return (
            f"no valid memories in {directory} ({count} file(s): an index, sessions or "
            f"files with errors; `memoryd list {directory}` shows which)"
        )
    subfolders = memory_subfolders(directory)
    if not subfolders:
        return f"no memories in {directory} (0 files)"
    guess = os.path.join(directory, subfolders[0])
    return (
        f"{directory} holds no memory files; did you mean {guess}? "
        f"(subfolders with memory files: {', '.join(subfolders)})"
    )
