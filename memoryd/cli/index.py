"""``memoryd index`` and ``memoryd list``: the index without a daemon."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from memoryd._delivery import MAX_FILE_BYTES, MAX_FILE_LINES
from memoryd.cli.common import add_db_option, memory_dir, print_json
from memoryd.cli.daemon import add_socket_options, daemon_or_local
from memoryd.cli.flags import wire_params

if TYPE_CHECKING:
    from memoryd.replies import ListReply


def register(sub: Any) -> None:
    p = sub.add_parser("index", help="index memory directories now (incrementally)")
    p.add_argument("dirs", nargs="+", metavar="DIR", help="memory directory (searched recursively)")
    add_db_option(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=cmd_index)

    p = sub.add_parser("list", help="show a directory's manifest and its parse errors")
    p.add_argument("dir", metavar="DIR", help="the memory directory")
    add_db_option(p)
    add_socket_options(p, fallback=True)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_list)


def cmd_index(args: argparse.Namespace) -> int:
    from memoryd.cli import local  # noqa: PLC0415 - in-process work, loaded when needed

    dirs = [memory_dir(d) for d in args.dirs]
    with local.local_store(args) as store:
        result = local.index_dirs(store, dirs)
    if args.json:
        print_json(result.to_json())
        return 0
    print(
        f"added {result.added}, updated {result.updated}, removed {result.removed}, "
        f"unchanged {result.unchanged}, errors {len(result.errors)} "
        f"in {result.seconds:.2f} s"
    )
    for err in result.errors:
        print(f"  error: {err['path']}: {err['error']}")
    return 0


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


def cmd_list(args: argparse.Namespace) -> int:
    directory = memory_dir(args.dir)

    payload = daemon_or_local(args, "list", wire_params(args, "list", dir=directory))
    if args.json:
        print_json(payload)
    else:
        print(render_list(payload))
    return 0
