"""What a configuration means, for ``config check`` and ``config show``: each setting's value,
where it came from (the file, the environment or the default) and what it does."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any, NamedTuple

from apscheduler.triggers.cron import CronTrigger

from memoryd import config as config_mod
from memoryd import paths
from memoryd.claude_folders import known_folders

FILE, ENV, DEFAULT = "file", "environment", "default"


class Setting(NamedTuple):
    """One setting: its dotted key, effective value, where it came from, and what it does."""

    key: str
    value: Any
    source: str
    meaning: str

    # dict[str, Any]: JSON for `config check --json`; a value is any config value.
    def to_json(self) -> dict[str, Any]:
        return self._asdict()


def explain(cfg: config_mod.Config) -> list[Setting]:
    """Every setting of ``cfg`` (each of :data:`memoryd.config.KEYS`, and the index); a few
    keys' meanings say what their value does here."""
    told = _meanings(cfg)
    out: list[Setting] = []
    for key in config_mod.KEYS:
        value = _plain(config_mod.value_of(cfg, key))
        if key.secret:
            value = "<set>" if value else None
        source = _source(key.key, cfg.given, key.env)
        out.append(Setting(key.key, value, source, told.get(key.key, key.meaning)))
        if key.key == "state_dir":
            db = "the index (not a file key: MEMORYD_DB or --db)"
            out.append(Setting("db", str(cfg.db_path), _source("db", cfg.given, "MEMORYD_DB"), db))
    return out


def _source(key: str, given: frozenset[str], env: str) -> str:
    # MEMORYD_* win over the file; ANTHROPIC_* only fill in what it leaves unset.
    from_env = bool(env and os.environ.get(env)) and (
        key not in given or env.startswith("MEMORYD_")
    )
    return ENV if from_env else FILE if key in given else DEFAULT


def _plain(value: object) -> object:
    """A value as JSON and YAML print it: paths as text, tuples as lists."""
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    return value


def _meanings(cfg: config_mod.Config) -> dict[str, str]:
    """What the keys whose effect depends on their value (or on others) do with ``cfg``."""
    a, o = cfg.anthropic, cfg.openai
    if o.base_url:
        judge = f"the judge: {o.model} at {o.base_url} (ranker auto), local when it fails"
    else:
        judge = "no server: --ranker openai is refused"
    if a.api_key:
        ranker = f"select ranks with Claude ({a.model}) judging the shortlist" + (
            " when asked by name (--ranker anthropic)"
            if o.base_url
            else ", the local ranker when Claude fails"
        )
    elif o.base_url:
        ranker = "no key: --ranker anthropic is refused"
    else:
        ranker = "no key: select ranks with the local ranker; --ranker anthropic is refused"
    stored = "the query text" if cfg.log_queries else "a hash and the length of each query"
    idle = cfg.request_root_idle_days
    return {
        "roots": _roots_meaning(cfg),
        "request_root_idle_days": (
            f"a folder only requests named: forgotten {idle:g} days after its last use"
        ),
        "openai.base_url": judge,
        "anthropic.api_key": ranker,
        "telemetry.log_queries": f"selector telemetry stores {stored}",
        "reports.cron": _next_report(cfg.report_cron),
        "checkouts": _checkouts_meaning(cfg),
    }


def _roots_meaning(cfg: config_mod.Config) -> str:
    if cfg.roots:
        missing = [r for r in cfg.roots if not os.path.isdir(r)]
        gone = f"; not a folder: {', '.join(missing)}" if missing else ""
        return f"serve watches these instead of the default folders{gone}"
    found = known_folders()
    if found:
        return f"none set: serve watches Claude Code's {len(found)} memory folder(s)"
    return f"none set: serve watches {paths.data_memory_dir()} (no Claude Code memory folders)"


def _next_report(cron: str) -> str:
    now = dt.datetime.now().astimezone()
    upcoming = CronTrigger.from_crontab(cron).get_next_fire_time(None, now)
    return f"the next compaction report is due {upcoming:%Y-%m-%d %H:%M} local time"


def _checkouts_meaning(cfg: config_mod.Config) -> str:
    if not cfg.checkouts:
        return "none: each folder's checkout comes from the hook, transcripts or its name"
    bad = [c for c in cfg.checkouts.values() if not os.path.isdir(c)]
    return f"{len(cfg.checkouts)} folder(s) mapped" + (
        f"; not a folder: {', '.join(bad)}" if bad else ""
    )


# dict[str, Any]: the config file's shape, for YAML and JSON; values are any config value.
def effective(settings: list[Setting]) -> dict[str, Any]:
    """The settings the file can hold (not ``db``), nested as it writes them."""
    out: dict[str, Any] = {}
    for s in settings:
        section, _, key = s.key.rpartition(".")
        if s.key != "db":
            (out.setdefault(section, {}) if section else out)[key] = s.value
    return out
