"""Find memory files and memory folders on disk, and stat them, without reading them.

Only ``*.md`` files count. Hidden entries, editor backups and folders of other
people's files (:func:`is_skipped_dir`) are skipped below a root, by the scan
and the watcher alike; symlinked directories are not followed. A memory folder
directly holds ``MEMORY.md`` or a ``*.md`` file opening with a ``---`` header.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Iterator

from memoryd.bounded_read import open_regular
from memoryd.indexer.parse import describe_os_error
from memoryd.indexer.records import INDEX_FILENAME, FileStat
from memoryd.paths import escaped, name_problem

SKIP_DIRS = frozenset(
    {
        *("node_modules", "bower_components", "__pycache__"),
        *("venv", "site-packages", "dist-packages", "CVS"),
    }
)
"""Directory names never walked or watched below a root (hidden ones are not either)."""
VENV_MARKER = "pyvenv.cfg"
"""A directory holding this file is a Python virtualenv, whatever its name."""


def is_skipped_dir(name: str, path: str) -> bool:
    """True for a directory below a root that is never walked or watched: hidden, a
    dependency or cache folder by name, or a virtualenv (it holds ``pyvenv.cfg``)."""
    if name in SKIP_DIRS or name.startswith("."):
        return True
    return os.path.isfile(os.path.join(path, VENV_MARKER))


def skipped_below(root: str, path: str) -> bool:
    """True when ``path`` lies in (or is) a skipped directory below ``root``."""
    if path == root or not path.startswith(root.rstrip("/") + "/"):
        return False
    directory = root
    for name in os.path.relpath(path, root).split(os.sep):
        directory = os.path.join(directory, name)
        if is_skipped_dir(name, directory):
            return True
    return False


def is_memory_filename(name: str) -> bool:
    """True for ``*.md`` that are not hidden files or editor leftovers."""
    return name.endswith(".md") and not name.startswith((".", "#", "~")) and name != ".md"


Listing = Iterable[tuple[str, list[os.DirEntry[str]]]]
"""A tree as :func:`walk_dirs` yields it: each directory with its file entries."""


def walk_dirs(
    root: str, keep: Callable[[str], bool] = is_memory_filename
) -> Iterator[tuple[str, list[os.DirEntry[str]]]]:
    """Yield ``(directory, entries)`` for ``root`` and every real subdirectory, the
    entries being its files whose names ``keep`` accepts; unreadable ones are skipped."""
    stack = [root]
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as it:
                entries = list(it)
        except OSError:
            continue
        files = []
        for entry in entries:
            name = entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not is_skipped_dir(name, entry.path):
                        stack.append(entry.path)
                    continue
            except OSError:
                continue
            if keep(name):
                files.append(entry)
        yield directory, files


def stat_entry(
    entry: os.DirEntry[str], directory: str, boundary: str | None = None
) -> FileStat | None:
    """:func:`stat_path` of a file a scan listed in ``directory`` (its cached stat used)."""
    return _stat(entry.path, directory, entry.name, boundary, entry)


def stat_path(path: str, boundary: str | None = None) -> FileStat | None:
    """Stat a memory file through symlinks, without reading it; None when nothing is there.

    Keyed by :func:`~memoryd.paths.escaped` names. A name that is not UTF-8 or holds a
    control character, a symlink that resolves outside ``boundary`` (the root's real
    path) or cannot be followed, and anything but a regular file are error entries.
    """
    directory, filename = os.path.split(path)
    return _stat(path, directory, filename, boundary, None)


def _stat(
    path: str, directory: str, filename: str, boundary: str | None, entry: os.DirEntry[str] | None
) -> FileStat | None:
    problem = name_problem(path)
    if problem is not None:
        if not os.path.lexists(path):
            return None
        shown = escaped(path)
        why = f"path {problem} (shown escaped); rename it to index the file"
        return _failed(path, escaped(directory), os.path.basename(shown), why, key=shown, size=True)
    if boundary is not None and _is_link(path, entry):
        target = os.path.realpath(path)
        if target != boundary and not target.startswith(boundary.rstrip("/") + "/"):
            why = f"symlink points outside the root (to {escaped(target)!r}); not followed"
            return _failed(path, directory, filename, why)
    try:
        st = entry.stat() if entry is not None else os.stat(path)
    except OSError as exc:
        if not _is_link(path, entry):
            return None
        return _failed(path, directory, filename, describe_os_error(exc, path))
    if not stat.S_ISREG(st.st_mode):
        return _failed(path, directory, filename, "not a regular file")
    return FileStat(path, directory, filename, st.st_mtime_ns, st.st_size, st.st_ino)


def _is_link(path: str, entry: os.DirEntry[str] | None) -> bool:
    return entry.is_symlink() if entry is not None else os.path.islink(path)


def _failed(
    path: str, directory: str, filename: str, why: str, *, key: str = "", size: bool = False
) -> FileStat:
    """An error record with the entry's own ``lstat`` (zeros when gone); size 0 unless asked."""
    try:
        lst = os.lstat(path)
        mtime_ns, length, inode = lst.st_mtime_ns, lst.st_size if size else 0, lst.st_ino
    except OSError:
        mtime_ns, length, inode = 0, 0, 0
    return FileStat(key or path, directory, filename, mtime_ns, length, inode, stat_error=why)


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
