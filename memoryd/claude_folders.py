"""Which memory folder Claude Code uses for a project, resolved as Claude Code resolves it
(a setting Claude Code would ignore is ignored). Standard library only: the hook uses it."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import NamedTuple

MAX_NAME = 200
"""Claude Code keeps this many characters of a sanitised path, then adds ``-<hash>``."""
MANAGED_SETTINGS = Path("/etc/claude-code/managed-settings.json")
Environ = os._Environ[str] | dict[str, str]
"""An environment to resolve in: ``os.environ``, or a child process's."""
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")


class Resolved(NamedTuple):
    """A project's memory folder, how it was chosen, the start directory (symlinks resolved)
    and the checkout it is known by (its main git checkout, else itself)."""

    directory: Path
    reason: str
    project: str
    checkout: str


def _utf16_units(text: str) -> list[int]:
    """``text`` as JavaScript sees it: UTF-16 code units (a non-BMP character is two)."""
    data = text.encode("utf-16-le", "surrogatepass")
    return [data[i] | data[i + 1] << 8 for i in range(0, len(data), 2)]


def path_hash(text: str) -> str:
    """Claude Code's short hash of a path: the 32-bit ``h*31 + unit`` hash, ``abs``, base 36."""
    h = 0
    for unit in _utf16_units(text) if not text.isascii() else map(ord, text):
        h = (h * 31 + unit) & 0xFFFFFFFF
    if h >= 0x80000000:
        h = 0x100000000 - h  # abs() of the signed value (-2**31 stays 2**31, as in JS)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        h, r = divmod(h, 36)
        out = digits[r] + out
        if not h:
            return out


def folder_name(path: str) -> str:
    """The ``projects/`` folder name for ``path``: each UTF-16 unit not ``[A-Za-z0-9]`` becomes
    ``-``; past :data:`MAX_NAME` characters, cut and ``-<hash of the whole path>`` added."""
    if path.isascii():
        name = _NOT_ALNUM.sub("-", path)
    else:
        name = "".join(chr(u) if u < 128 and chr(u).isalnum() else "-" for u in _utf16_units(path))
    if len(name) <= MAX_NAME:
        return name
    return f"{name[:MAX_NAME]}-{path_hash(path)}"


def git_root(path: str) -> str | None:
    """The nearest directory at or above ``path`` holding a ``.git`` (directory or file)."""
    current = os.path.abspath(path)
    while True:
        if os.path.isdir(os.path.join(current, ".git")) or os.path.isfile(
            os.path.join(current, ".git")
        ):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def canonical_git_root(path: str) -> str | None:
    """:func:`git_root`, mapped from a linked worktree to its main checkout (only when its
    ``gitdir`` has a ``commondir`` and a ``gitdir`` leading back: not for a submodule)."""
    root = git_root(path)
    if root is None:
        return None
    try:
        with open(os.path.join(root, ".git"), encoding="utf-8") as fh:
            pointer = fh.read().strip()
    except (IsADirectoryError, OSError, UnicodeDecodeError):
        return root
    if not pointer.startswith("gitdir:"):
        return root
    try:
        gitdir = os.path.normpath(os.path.join(root, pointer[7:].strip()))
        with open(os.path.join(gitdir, "commondir"), encoding="utf-8") as fh:
            common = os.path.normpath(os.path.join(gitdir, fh.read().strip()))
        if os.path.dirname(gitdir) != os.path.join(common, "worktrees"):
            return root
        with open(os.path.join(gitdir, "gitdir"), encoding="utf-8") as fh:
            back = os.path.realpath(fh.read().strip())
        if back != os.path.join(os.path.realpath(root), ".git"):
            return root
    except (OSError, UnicodeDecodeError):
        return root
    return common if os.path.basename(common) != ".git" else os.path.dirname(common)


def _home(env: Environ) -> Path:
    return Path(env["HOME"]) if env.get("HOME") else Path.home()


def config_dir(environ: Environ | None = None) -> Path:
    """``$CLAUDE_CONFIG_DIR`` or ``~/.claude``: settings.json and, by default, ``projects/``."""
    env = os.environ if environ is None else environ
    given = env.get("CLAUDE_CONFIG_DIR")
    return Path(given) if given else _home(env) / ".claude"


def claude_base(environ: Environ | None = None) -> Path:
    """Where Claude Code keeps ``projects/``: the remote memory dir, the config dir or ~/.claude."""
    env = os.environ if environ is None else environ
    remote = env.get("CLAUDE_CODE_REMOTE_MEMORY_DIR")
    return Path(remote) if remote else config_dir(env)


def checked_setting(value: object, *, home: Path | None) -> str | None:
    """A memory-directory setting as Claude Code accepts it, or None when it would ignore it;
    ``home`` expands a leading ``~/`` (None: no expansion, as for the override)."""
    if not isinstance(value, str) or not value:
        return None
    if home is not None and value.startswith("~/"):
        rest = os.path.normpath(value[2:] or ".")
        if rest in (".", "..") or rest.startswith("../"):
            return None
        value = os.path.join(str(home), rest)
    # As Node's normalize: a leading "//" collapses too (POSIX normpath keeps it).
    path = re.sub(r"^/+", "/", os.path.normpath(value)).rstrip("/")
    if not os.path.isabs(path) or len(path) < 3 or "\x00" in path:
        return None
    return path


def _setting(path: Path) -> object:
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return None
    return doc.get("autoMemoryDirectory") if isinstance(doc, dict) else None


def memory_folder(project_dir: str, environ: Environ | None = None) -> Resolved:
    """The memory folder Claude Code uses for a session started in ``project_dir``, first
    match wins: ``$CLAUDE_COWORK_MEMORY_PATH_OVERRIDE``; ``autoMemoryDirectory`` in the managed,
    the project's local, the project's and the user's settings; else
    ``<claude_base>/projects/<folder_name(main git checkout, or the directory)>/memory``."""
    env = os.environ if environ is None else environ
    project = os.path.realpath(project_dir)
    root = canonical_git_root(project)
    named = root or project
    override = checked_setting(env.get("CLAUDE_COWORK_MEMORY_PATH_OVERRIDE"), home=None)
    if override:
        return Resolved(Path(override), "$CLAUDE_COWORK_MEMORY_PATH_OVERRIDE", project, named)
    local, user = Path(project) / ".claude", config_dir(env) / "settings.json"
    for settings in (
        MANAGED_SETTINGS,
        local / "settings.local.json",
        local / "settings.json",
        user,
    ):
        chosen = checked_setting(_setting(settings), home=_home(env))
        if chosen:
            return Resolved(Path(chosen), f"autoMemoryDirectory in {settings}", project, named)
    base = claude_base(env)
    folder = base / "projects" / folder_name(named) / "memory"
    if not str(folder).isascii():
        import unicodedata  # noqa: PLC0415 - only for a non-ASCII base path

        folder = Path(unicodedata.normalize("NFC", str(folder)))
    if root is None:
        why = f"named after {project} (not in a git checkout)"
    elif root == project:
        why = f"named after the git checkout {root}"
    else:
        why = f"named after the git checkout {root} of {project}"
    return Resolved(folder, why, project, named)


def project_dir(cwd: str, transcript_path: str | None, environ: Environ) -> str:
    """The directory Claude Code started in: ``$CLAUDE_PROJECT_DIR``, else the ancestor of
    ``cwd`` whose :func:`folder_name` is the transcript's folder, else ``cwd``."""
    given = environ.get("CLAUDE_PROJECT_DIR")
    if given and os.path.isabs(given):
        return given
    if transcript_path:
        want = os.path.basename(os.path.dirname(transcript_path))
        current = os.path.realpath(cwd)
        while True:
            if folder_name(current) == want:
                return current
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
    return cwd


def known_folders(environ: Environ | None = None) -> list[Path]:
    """Every memory folder Claude Code has for this user: ``projects/*/memory`` and those the
    managed and user settings name (project settings cannot be listed)."""
    env = os.environ if environ is None else environ
    found = sorted(p for p in (claude_base(env) / "projects").glob("*/memory") if p.is_dir())
    for settings in (MANAGED_SETTINGS, config_dir(env) / "settings.json"):
        chosen = checked_setting(_setting(settings), home=_home(env))
        if chosen and os.path.isdir(chosen) and Path(chosen) not in found:
            found.append(Path(chosen))
    return found
