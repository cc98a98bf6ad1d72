"""``dict[str, Any]`` in a signature is the exception, and each one says why it stays.

Structures with known keys have TypedDicts (the reply types, the report's
document, a staleness verdict); inputs read and then checked are
``Mapping[str, object]``. What remains is JSON or YAML from outside before
it is checked, or a shape a caller elsewhere holds as ``dict[str, Any]``; a
comment just above the ``def`` (or on its first lines) names the reason.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("memoryd", "daemon", "indexer", "ipc")
MOST = 30
"""The issue's ceiling for the whole code base."""


def loose_signatures() -> Iterator[tuple[str, int, str]]:
    """``(file, line of the def, function name)`` for each annotation naming ``dict[str, Any]``."""
    for folder in FOLDERS:
        for file in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                args = node.args
                params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
                annotations = [a.annotation for a in params if a.annotation is not None]
                if node.returns is not None:
                    annotations.append(node.returns)
                for annotation in annotations:
                    if "dict[str, Any]" in ast.unparse(annotation):
                        yield str(file.relative_to(ROOT)), node.lineno, node.name


def explained(file: str, line: int) -> bool:
    """A comment naming ``dict[str, Any]`` right above the ``def`` or among its first lines."""
    lines = (ROOT / file).read_text(encoding="utf-8").splitlines()
    above = []
    for text in reversed(lines[: line - 1]):
        if not text.strip().startswith("#"):
            break
        above.append(text)
    inline = [text.partition("#")[2] for text in lines[line - 1 : line + 3]]
    return any("dict[str, Any]" in text for text in above + inline)


def test_at_most_thirty_signatures_take_or_give_dict_str_any() -> None:
    found = list(loose_signatures())
    assert len(found) <= MOST, "\n".join(f"{f}:{n} {name}" for f, n, name in found)


def test_each_one_says_why() -> None:
    silent = [
        f"{file}:{line} {name}"
        for file, line, name in loose_signatures()
        if not explained(file, line)
    ]
    assert not silent, "dict[str, Any] without a reason:\n" + "\n".join(silent)
