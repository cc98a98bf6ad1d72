"""Imports point one way: no module imports a layer above its own.

The layers, bottom to top (a module may import its own layer and any below):

1. **base**: helpers that need nothing of memoryd but errors and paths
   (``errors``, ``paths``, ``bounded_read``, ``_unicode_words``,
   ``_sized_cache``, ``system_trees``), where
   Claude Code keeps its memory folders (``claude_folders``: config's default
   roots need it as much as the hook does), and the wire methods written
   once: their declarations (``methods``, ``params``), reply types (``replies``,
   ``check_replies``; ``file_entries``, the entries storage returns too) and
   directory checks (``requests``), which every layer above speaks.
2. **storage**, ``memoryd.indexer``: files, parses, the SQLite index and its
   schema. Citation extraction is storage's own, like the secret scan. It
   returns its own row types or ``file_entries`` and never imports the reply
   types (:data:`FORBIDDEN`).
3. **domain**: what memoryd does with the index: ``select``, ``sessions``,
   ``staleness``, ``report``; what an agent is shown of a memory (``_delivery``: the
   hook, MCP and the report's oversize flag share its caps); and the two
   settings modules that lean on storage helpers: ``config`` (read with the
   indexer's YAML guard) and ``logs`` (redacted with the indexer's secret
   scan). Nothing below reads config.
4. **service**, ``memoryd.service``: one call per method over an index,
   for the daemon and the CLI.
5. **wire**, ``memoryd.ipc``: the NDJSON protocol, the socket server, the
   client.
6. **top**: the programs built from the rest: ``memoryd.daemon``,
   ``memoryd.integrations`` (the hook, MCP), ``memoryd.systemd``, the CLI
   (the ``cli`` package, ``__main__``, ``completion``), ``doctor``,
   ``config_explain``, and the ``memoryd`` package itself, whose
   ``__init__`` re-exports the client as the public surface.

Every module must be placed: a new one with no entry here fails the test,
so its layer is a decision, not an accident. Imports inside functions and
under ``TYPE_CHECKING`` count too: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "memoryd._sized_cache",
        "memoryd._unicode_words",
        "memoryd.bounded_read",
        "memoryd.check_replies",
        "memoryd.claude_folders",
        "memoryd.errors",
        "memoryd.file_entries",
        "memoryd.methods",
        "memoryd.params",
        "memoryd.paths",
        "memoryd.replies",
        "memoryd.requests",
        "memoryd.system_trees",
    ),
    ("memoryd.indexer",),
    (
        "memoryd._delivery",
        "memoryd.config",
        "memoryd.logs",
        "memoryd.report",
        "memoryd.select",
        "memoryd.sessions",
        "memoryd.staleness",
    ),
    ("memoryd.service",),
    ("memoryd.ipc",),
    (
        "memoryd",
        "memoryd.__main__",
        "memoryd.cli",
        "memoryd.completion",
        "memoryd.config_explain",
        "memoryd.daemon",
        "memoryd.doctor",
        "memoryd.integrations",
        "memoryd.systemd",
    ),
)
"""Each entry names a module, a package (with everything in it) or, ending in
``*``, the modules whose names start so."""

FORBIDDEN: dict[str, tuple[str, ...]] = {
    "memoryd.indexer": ("memoryd.replies", "memoryd.check_replies")
}
"""Imports a layer may not make although the target is below it: storage returns its own
row types, and the layers above it shape the replies."""

ALLOWED_UPWARD: set[str] = set()
"""Modules anyone may import whatever their layer, until they move to theirs (none now)."""


def modules() -> dict[str, Path]:
    """Every module of the installed package by name, through pyproject's package-dir."""
    with (ROOT / "pyproject.toml").open("rb") as fh:
        mapped: dict[str, str] = tomllib.load(fh)["tool"]["setuptools"]["package-dir"]
    folders = {"memoryd": ROOT / "memoryd"} | {n: ROOT / f for n, f in mapped.items()}
    found: dict[str, Path] = {}
    for package, folder in folders.items():
        for file in folder.rglob("*.py"):
            parts = file.relative_to(folder).with_suffix("").parts
            found[".".join((package, *parts)).removesuffix(".__init__")] = file
    return found


def imported(name: str, file: Path, known: dict[str, Path]) -> Iterator[tuple[int, str]]:
    """``(line, module)`` for every memoryd module ``file`` imports, wherever the import is."""
    package = name if file.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"), str(file))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            # `from pkg import mod` imports the module; `from mod import name`, the module.
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            module = target
            while module not in known and "." in module:
                module = module.rpartition(".")[0]
            if module in known and module != name:
                yield node.lineno, module


def layer_of(module: str) -> int | None:
    """The layer of the most specific entry that covers ``module``."""
    best: tuple[int, int] | None = None  # (specificity, layer)
    for layer, entries in enumerate(LAYERS):
        for entry in entries:
            if entry.endswith("*"):
                covers = module.startswith(entry[:-1])
            elif entry == "memoryd":
                covers = module == "memoryd"  # the package's __init__, not its contents
            else:
                covers = module == entry or module.startswith(entry + ".")
            if covers and (best is None or len(entry) > best[0]):
                best = (len(entry), layer)
    return None if best is None else best[1]


def test_every_module_has_a_layer() -> None:
    assert [m for m in sorted(modules()) if layer_of(m) is None] == []


def test_no_module_imports_a_layer_above_its_own() -> None:
    known = modules()
    upward: set[str] = set()
    for name, file in sorted(known.items()):
        own = layer_of(name)
        for line, target in imported(name, file, known):
            theirs = layer_of(target)
            if own is None or theirs is None or target in ALLOWED_UPWARD:
                continue
            if theirs > own:
                upward.add(f"{file.relative_to(ROOT)}:{line}: {name} -> {target}")
    assert not upward, "imports that point up a layer:\n" + "\n".join(sorted(upward))


def test_no_module_imports_what_its_package_is_forbidden() -> None:
    known = modules()
    found = {
        f"{file.relative_to(ROOT)}:{line}: {name} -> {target}"
        for name, file in sorted(known.items())
        for package, targets in FORBIDDEN.items()
        if name == package or name.startswith(package + ".")
        for line, target in imported(name, file, known)
        if target in targets
    }
    assert not found, "forbidden imports:\n" + "\n".join(sorted(found))


def test_the_walk_sees_lazy_and_type_checking_imports(tmp_path: Path) -> None:
    """The walk must not miss an import because it sits in a function or a guard."""
    source = tmp_path / "example.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from memoryd.ipc.client import Client\n"
        "def later():\n"
        "    from memoryd import service\n"
        "    import memoryd.daemon.app\n"
        "from . import paths\n",
        encoding="utf-8",
    )
    known = modules()
    found = {t for _, t in imported("memoryd.example", source, known)}
    assert found == {
        "memoryd.ipc.client",
        "memoryd.service",
        "memoryd.daemon.app",
        "memoryd.paths",
    }
