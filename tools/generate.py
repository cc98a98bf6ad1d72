"""Write what is made from the methods' declarations: docs/protocol.md's tables, the CLI's.

In docs/protocol.md each table sits between ``<!-- params NAME -->`` and
``<!-- /params -->``; in memoryd/cli/flags.py the ``PARAMS`` table sits between
``# fmt: off`` and ``# fmt: on``. The rest of each file is left as it is.
``--check`` writes nothing and exits 1 when either differs from the
declarations (tests/test_generated.py runs it).

Usage: python tools/generate.py [--check]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from memoryd.methods import METHODS
from memoryd.params import Param

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "protocol.md"
FLAGS = ROOT / "memoryd" / "cli" / "flags.py"
BLOCK = re.compile(r"(<!-- params (\w+) -->\n).*?(<!-- /params -->)", re.DOTALL)
FLAGS_BLOCK = re.compile(r"(# fmt: off\n).*?(# fmt: on)", re.DOTALL)
KINDS = {
    "string": "string",
    "dir": "directory path",
    "dirs": "directory path or list of them",
    "integer": "integer",
    "boolean": "boolean",
    "strings": "list of strings",
    "mapping": "mapping",
    "duration": "duration (`30d`, `12h`, seconds)",
}


def _type(p: Param) -> str:
    if p.choices:
        return ", ".join(f"`{c}`" for c in p.choices)
    text = KINDS[p.kind]
    if p.lo is not None:
        text += f" {p.lo:,}–{p.hi:,}"
    if p.max_len is not None:
        text += f", at most {p.max_len:,} chars"
    return text


def _default(p: Param) -> str:
    if p.required:
        return "required"
    if p.default is None:
        return "none"
    if p.default == ():
        return "`[]`"
    return f"`{str(p.default).lower() if isinstance(p.default, bool) else p.default}`"


def table(name: str) -> str:
    rows = ["| param | type | default | |", "|---|---|---|---|"]
    rows += [f"| `{p.name}` | {_type(p)} | {_default(p)} | {p.doc} |" for p in METHODS[name].params]
    return "\n".join(rows) + "\n"


def _entry(p: Param) -> str:
    """One param's row laid out as ruff would: one line, else the fields on one line of
    their own, else one line each."""
    fields = (p.kind, p.help, p.default, p.choices)
    lines = [f"        {p.name!r}: ({', '.join(map(repr, fields))}),"]
    if len(lines[0]) > 100:
        lines = [f"            {', '.join(map(repr, fields))}"]
        if len(lines[0]) > 100:
            lines = [f"            {f!r}," for f in fields]
        lines = [f"        {p.name!r}: (", *lines, "        ),"]
    return "\n".join(lines)


def flags_table() -> str:
    """The params the CLI may offer as flags, of each method that has some."""
    lines = ["PARAMS: dict[str, dict[str, tuple[str, str, object, tuple[str, ...]]]] = {"]
    for name, method in METHODS.items():
        offered = [p for p in method.params if not p.daemon_only]
        if offered:
            lines += [f"    {name!r}: {{", *map(_entry, offered), "    },"]
    return "\n".join([*lines, "}"]) + "\n"


def render(text: str) -> str:
    return BLOCK.sub(lambda m: m.group(1) + table(m.group(2)) + m.group(3), text)


def main(argv: list[str]) -> int:
    stale = []
    for path, made in (
        (PAGE, render(PAGE.read_text(encoding="utf-8"))),
        (
            FLAGS,
            FLAGS_BLOCK.sub(
                lambda m: m.group(1) + flags_table() + m.group(2), FLAGS.read_text(encoding="utf-8")
            ),
        ),
    ):
        if made != path.read_text(encoding="utf-8"):
            stale.append(path)
            if "--check" not in argv:
                path.write_text(made, encoding="utf-8")
    if stale and "--check" in argv:
        print(
            f"out of date: {', '.join(map(str, stale))}: run python tools/generate.py",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
