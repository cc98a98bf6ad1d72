"""``memoryd config check|show``, ``doctor`` and ``completion``: setting this installation up.

``config check`` validates the file as ``serve`` will (exit 1 when serve would refuse it)
and says what each setting does; ``config show`` prints the effective configuration as
YAML (the API key only as ``<set>``); ``doctor`` exits 1 only when a check failed.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from memoryd.cli.common import print_json, show


def register(sub: Any) -> None:
    c = sub.add_parser("config", help="check or show the configuration")
    actions = c.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, handler, text in (
        ("check", cmd_check, "validate the config file as serve will, and say what it sets"),
        ("show", cmd_show, "print the effective configuration, defaults included"),
    ):
        a = actions.add_parser(name, help=text)
        a.add_argument(
            "--config",
            type=Path,
            default=None,
            help="config file (default $XDG_CONFIG_HOME/memoryd/config.yaml)",
        )
        a.add_argument("--json", action="store_true", help="print the result as JSON")
        a.set_defaults(handler=handler)

    d = sub.add_parser("doctor", help="check this installation: daemon, socket, index, hook, units")
    d.add_argument("--socket", type=Path, default=None, help="daemon socket to check")
    d.add_argument("--json", action="store_true", help="print the result as JSON")
    d.set_defaults(handler=cmd_doctor)

    from memoryd.completion import SHELLS  # noqa: PLC0415 - light, but only this command uses it

    c = sub.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh, fish)",
        description=COMPLETION_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument("shell", choices=SHELLS, help="the shell to print the script for")
    c.set_defaults(handler=cmd_completion)


COMPLETION_HELP = """\
``eval "$(memoryd completion bash)"`` in ``~/.bashrc`` (zsh likewise, after
``compinit``); ``memoryd completion fish | source`` in fish's config, or save
the output as ``~/.config/fish/completions/memoryd.fish``."""


def cmd_completion(args: argparse.Namespace) -> int:
    from memoryd.cli import build_parser  # noqa: PLC0415 - every command, to complete them all
    from memoryd.completion import script  # noqa: PLC0415

    print(script(args.shell, build_parser()), end="")
    return 0


LABELS = {"ok": "ok  ", "warn": "warn", "fail": "FAIL"}


def cmd_doctor(args: argparse.Namespace) -> int:
    from memoryd import doctor  # noqa: PLC0415 - its checks import the index and the installers

    checks = doctor.run_checks(doctor.gather(args.socket))
    failed = any(c.status == doctor.FAIL for c in checks)
    width = max(len(c.name) for c in checks)
    text = "\n".join(f"{LABELS[c.status]}  {c.name:<{width}}  {c.detail}" for c in checks)
    show(args, {"ok": not failed, "checks": [c.to_json() for c in checks]}, lambda _: text)
    return 1 if failed else 0


def _load(args: argparse.Namespace) -> tuple[Path, bool, list[Any]]:
    """The file, whether it exists, and its settings explained (ConfigError when invalid)."""
    from memoryd import config as config_mod  # noqa: PLC0415 - keep other commands light
    from memoryd import paths  # noqa: PLC0415
    from memoryd.config_explain import explain  # noqa: PLC0415

    path = args.config or paths.config_file()
    cfg = config_mod.load(args.config)
    return path, path.is_file(), explain(cfg)


def cmd_check(args: argparse.Namespace) -> int:
    path, exists, settings = _load(args)
    chosen = [s for s in settings if s.source != "default"]
    if args.json:
        listed = [s.to_json() for s in settings]
        print_json({"file": str(path), "exists": exists, "valid": True, "settings": listed})
        return 0
    if exists:
        print(f"{path} is valid; serve will accept it.")
    else:
        print(f"no config file at {path}: every setting is its default.")
    for s in chosen:
        print(f"  {s.key} = {_shown(s.value)}  ({s.source}){': ' + s.meaning if s.meaning else ''}")
    defaults = [s for s in settings if s.source == "default" and s.meaning]
    if defaults:
        print("defaults in effect:")
        for s in defaults:
            print(f"  {s.key} = {_shown(s.value)}: {s.meaning}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    import yaml  # noqa: PLC0415 - only show prints YAML

    from memoryd.config_explain import effective  # noqa: PLC0415

    path, exists, settings = _load(args)
    if args.json:
        print_json(effective(settings))
        return 0
    origin = f"{path}" if exists else f"defaults (no file at {path})"
    print(f"# the effective configuration: {origin}, with the environment applied")
    print("# (the API key, when there is one, is shown only as <set>)")
    db = next(s for s in settings if s.key == "db")
    print(f"# index: {db.value} (not a file key: MEMORYD_DB or serve --db)")
    print(yaml.safe_dump(effective(settings), sort_keys=False, allow_unicode=True), end="")
    return 0


def _shown(value: Any) -> str:
    """A value as a person reads it: no Python reprs."""
    if value is None:
        return "unset"
    if isinstance(value, dict):
        return ", ".join(f"{k} -> {v}" for k, v in value.items()) or "none"
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "none"
    if isinstance(value, bool):
        return str(value).lower()
    return f"{value:g}" if isinstance(value, float) else str(value)
