"""``memoryd doctor``: one line per check of this installation; exit 1 when one fails.

The checks are in :mod:`memoryd.doctor`; this module prints them. A warning
(no daemon running, the hook not installed) leaves the exit status 0, since
those are states a working setup can be in.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from memoryd.cli.common import print_json

LABELS = {"ok": "ok  ", "warn": "warn", "fail": "FAIL"}


def register(sub: Any) -> None:
    d = sub.add_parser("doctor", help="check this installation: daemon, socket, index, hook, units")
    d.add_argument("--socket", type=Path, default=None, help="daemon socket to check")
    d.add_argument("--json", action="store_true", help="print the result as JSON")
    d.set_defaults(handler=cmd_doctor)


def cmd_doctor(args: argparse.Namespace) -> int:
    from memoryd import doctor  # noqa: PLC0415 - its checks import the index and the installers

    checks = doctor.run_checks(doctor.gather(args.socket))
    failed = any(c.status == doctor.FAIL for c in checks)
    if args.json:
        print_json({"ok": not failed, "checks": [c.to_json() for c in checks]})
        return 1 if failed else 0
    width = max(len(c.name) for c in checks)
    for c in checks:
        print(f"{LABELS[c.status]}  {c.name:<{width}}  {c.detail}")
    return 1 if failed else 0
