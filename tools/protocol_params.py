"""Write docs/protocol.md's parameter tables from the methods' declarations.

Each table sits between ``<!-- params NAME -->`` and ``<!-- /params -->``; the
rest of the page is left as it is. ``--check`` writes nothing and exits 1 when
a table differs from its declaration (tests/test_protocol_params.py runs it).

Usage: python tools/protocol_params.py [--check]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from memoryd.methods import METHODS
from memoryd.params import Param

PAGE = Path(__file__).resolve().parent.parent / "docs" / "protocol.md"
BLOCK = re.compile(r"(<!-- params (\w+) -->\n).*?(<!-- /params -->)", re.DOTALL)
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


def render(text: str) -> str:
    return BLOCK.sub(lambda m: m.group(1) + table(m.group(2)) + m.group(3), text)


def main(argv: list[str]) -> int:
    text = PAGE.read_text(encoding="utf-8")
    made = render(text)
    if "--check" in argv:
        if made != text:
            print(f"{PAGE} is out of date: run python tools/protocol_params.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(made, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
