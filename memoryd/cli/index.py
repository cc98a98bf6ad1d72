"""``memoryd index DIR...`` (``reindex`` of each folder; one outside the roots becomes a
request root, as a ``--dir`` does) and ``memoryd list``, answered by the daemon."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from memoryd._delivery import MAX_FILE_BYTES, MAX_FILE_LINES
from memoryd.cli.common import asks_daemon, memory_dir, show
from memoryd.cli.connect import answered, connected
from memoryd.cli.daemon import counts
from memoryd.cli.flags import add_params

if TYPE_CHECKING:
    from memoryd.replies import ListReply


def register(sub: Any) -> None:
    p = sub.add_parser("index", help="have the daemon index memory directories now")
    p.add_argument("dirs", nargs="+", metavar="DIR", help="memory directory (searched recursively)")
    asks_daemon(p, cmd_index)

    p = sub.add_parser("list", help="show a directory's manifest and its parse errors")
    add_params(p, "list", "dir")
    asks_daemon(p, answered("list", render_list))


def cmd_index(args: argparse.Namespace) -> int:
    dirs = [memory_dir(d) for d in args.dirs]
    counts = ("added", "updated", "removed", "unchanged")
    total: dict[str, Any] = {**dict.fromkeys(counts, 0), "errors": [], "seconds": 0.0, "dirs": []}
    with connected(args, timeout=600) as c:
        for directory in dirs:
            result = c.call("reindex", {"dir": directory})
            for key in total:
                total[key] += result[key]
    show(args, total, _indexed)
    return 0


def _indexed(total: Mapping[str, Any]) -> str:
    errors = [f"  error: {err['path']}: {err['error']}" for err in total["errors"]]
    return "\n".join([counts(total), *errors])


def render_list(payload: ListReply) -> str:
    lines = []
    for f in payload["files"]:
        label = f["type"] or (f["kind"] if f["kind"] != "memory" else "untyped")
        line = f"- [{label}] {f['filename']} ({f['mtime']}): {f['description'] or ''}"
        big = f.get("oversized")
        if big:
            line += (
                f" [oversized: {big['bytes']:,} bytes, {big['lines']:,} lines; the hook shows "
                f"only its first {MAX_FILE_BYTES // 1024} KB / {MAX_FILE_LINES} lines: condense it]"
            )
        lines.append(line)
        if f.get("warning"):
            lines.append(f"    warning: {f['warning']}")
    if payload["errors"]:
        lines.append(f"{len(payload['errors'])} file(s) could not be parsed:")
        lines.extend(f"  ! {e['path']}: {e['error']}" for e in payload["errors"])
    return "\n".join(lines)
