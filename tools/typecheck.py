"""Run mypy (strict, as configured in pyproject.toml) over memoryd at its real source paths.

``memoryd.daemon``, ``memoryd.indexer``, ``memoryd.ipc`` and ``memoryd.systemd``
live in the top-level folders ``daemon/``, ``indexer/``, ``ipc/`` and
``systemd/`` and reach the ``memoryd`` name through setuptools' package-dir
mapping. mypy finds modules only by walking directories, so ``mypy -p
memoryd`` cannot see them (nor can it follow the import hook of an editable
install). This script gives mypy every file together with its module name,
through mypy's build API, so each file is checked once under its one real path
and errors point at that path.

mypy still asks the file system whether ``memoryd.daemon.core`` exists when it
meets ``from memoryd.daemon import core``; a throw-away tree of symlinks in a
temp dir (``memoryd/`` with the mapped folders inside) answers that question.
No file is read through it: every module is already a source.

Usage: python tools/typecheck.py   (checks memoryd, the mapped folders, tests, bench, tools)
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from mypy import build
from mypy.errors import CompileError
from mypy.main import process_options
from mypy.modulefinder import BuildSource

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {
    "memoryd": "memoryd",
    "daemon": "memoryd.daemon",
    "indexer": "memoryd.indexer",
    "ipc": "memoryd.ipc",
    "systemd": "memoryd.systemd",
}
SCRIPTS = ("tests", "bench", "tools")


def module_name(path: Path) -> str | None:
    """``daemon/app.py`` -> ``memoryd.daemon.app``; None outside the mapped packages."""
    rel = path.relative_to(ROOT)
    package = PACKAGES.get(rel.parts[0])
    if package is None:
        return None
    parts = [package, *rel.parts[1:-1]]
    if rel.stem != "__init__":
        parts.append(rel.stem)
    return ".".join(parts)


def lookup_tree(base: Path) -> Path:
    """``base/memoryd`` laid out as installed, made of symlinks to the real folders."""
    tree = base / "memoryd"
    tree.mkdir()
    for entry in (ROOT / "memoryd").iterdir():
        os.symlink(entry, tree / entry.name)
    for folder, package in PACKAGES.items():
        if folder != "memoryd":
            os.symlink(ROOT / folder, tree / package.rpartition(".")[2])
    return base


def main() -> int:
    files = sorted(str(p) for top in (*PACKAGES, *SCRIPTS) for p in (ROOT / top).rglob("*.py"))
    with tempfile.TemporaryDirectory(prefix="memoryd-mypy-") as tmp:
        return check(files, lookup_tree(Path(tmp)))


def check(files: list[str], lookup: Path) -> int:
    sources, options = process_options(["--config-file", str(ROOT / "pyproject.toml"), *files])
    options.mypy_path = [str(lookup), *options.mypy_path]
    # Its own cache: a plain `mypy` run cannot see the mapped packages and
    # would leave import results behind that this run must not reuse.
    options.cache_dir = str(ROOT / ".mypy_cache" / "mapped")
    renamed = [
        BuildSource(s.path, module_name(Path(s.path or "").resolve()) or s.module, None, s.base_dir)
        for s in sources
    ]
    try:
        messages = build.build(renamed, options).errors
    except CompileError as exc:
        messages = exc.messages
    for line in messages:
        print(line)
    if messages:
        return 1
    print(f"Success: no issues found in {len(renamed)} source files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
