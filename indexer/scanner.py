"""Find memory files on disk and stat them, without reading them.

Only ``*.md`` files count. Hidden entries, editor backups and the folders
that hold other people's files (version control, dependencies, caches,
virtualenvs: :func:`is_skipped_dir`) are skipped, below a root, by the scan
and the watcher alike; symlinked directories are not followed (as watchman
does), so a link loop cannot trap a scan.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator

from memoryd.indexer.parse import describe_os_error
from memoryd.indexer.records import FileStat
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
    """True for a directory below a root that is never walked or watched.

    Hidden (``.git``, ``.venv``...), a dependency or cache folder by name, or
    a virtualenv (it holds ``pyvenv.cfg``: one stat).
    """
    if name in SKIP_DIRS or name.startswith("."):
        return True
    return os.path.isfile(os.path.join(path, VENV_MARKER))


def skipped_below(root: str, path: str) -> bool:
    """True when ``path`` lies in (or is) a skipped directory below ``root``."""
    if path == root or not path.startswith(root.rstrip("/") + "/"):
        return False
    parts = os.path.relpath(path, root).split(os.sep)
    directory = root
    for name in parts:
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
    entries being its files whose names ``keep`` accepts (memory files by default).

    Unreadable subdirectories are skipped silently; the root's own errors are
    the caller's (it checks the root before scanning).
    """
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


def stat_entry(entry: os.DirEntry[str], directory: str, boundary: str | None = None) -> FileStat:
    """Stat through symlinks; a link that cannot be followed is recorded as such.

    The record is keyed by :func:`~memoryd.paths.escaped` names, so a name that
    is not UTF-8 or holds a control character becomes an error entry that can
    be stored and shown (its bytes are never read). With ``boundary`` (the
    root's real path), a symlink whose target lies outside it is an error
    entry too: the root names what may be read.
    """
    problem = _name_problem(entry.path, directory)
    if problem is not None:
        return problem
    if boundary is not None and entry.is_symlink():
        outside = _outside(entry.path, boundary)
        if outside is not None:
            return _refused(entry.path, directory, entry.name, outside)
    try:
        st = entry.stat()
    except OSError as exc:
        return _failed(entry.path, directory, entry.name, describe_os_error(exc, entry.path))
    if not _is_regular(st.st_mode):
        return FileStat(
            entry.path,
            directory,
            entry.name,
            st.st_mtime_ns,
            0,
            st.st_ino,
            stat_error="not a regular file",
        )
    return FileStat(entry.path, directory, entry.name, st.st_mtime_ns, st.st_size, st.st_ino)


def stat_path(path: str, boundary: str | None = None) -> FileStat | None:
    """Stat one path for the watcher; None when nothing (not even a link) is there."""
    directory, filename = os.path.split(path)
    problem = _name_problem(path, directory)
    if problem is not None:
        return problem if os.path.lexists(path) else None
    if boundary is not None and os.path.islink(path):
        outside = _outside(path, boundary)
        if outside is not None:
            return _refused(path, directory, filename, outside)
    try:
        st = os.stat(path)
    except OSError as exc:
        if not os.path.islink(path):
            return None
        return _failed(path, directory, filename, describe_os_error(exc, path))
    if not _is_regular(st.st_mode):
        return None
    return FileStat(path, directory, filename, st.st_mtime_ns, st.st_size, st.st_ino)


def _is_regular(mode: int) -> bool:
    return (mode & 0o170000) == 0o100000


def _name_problem(path: str, directory: str) -> FileStat | None:
    """An error record keyed by the escaped path, when ``path``'s name cannot be kept as it is."""
    problem = name_problem(path)
    if problem is None:
        return None
    shown = escaped(path)
    why = f"path {problem} (shown escaped); rename it to index the file"
    return _failed(path, escaped(directory), os.path.basename(shown), why, key=shown, size=True)


def _outside(link: str, boundary: str) -> str | None:
    """The target of ``link`` when it resolves outside ``boundary``, else None."""
    target = os.path.realpath(link)
    if target == boundary or target.startswith(boundary.rstrip("/") + "/"):
        return None
    return escaped(target)


def _refused(path: str, directory: str, filename: str, target: str) -> FileStat:
    why = f"symlink points outside the root (to {target!r}); not followed"
    return _failed(path, directory, filename, why)


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
