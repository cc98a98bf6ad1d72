"""What a configuration means: each setting's value, where it came from, what it does.

``memoryd config check`` answers "is my file right, and what will the daemon
do with it?" and ``config show`` prints the whole effective configuration.
Both start from :func:`memoryd.config.load` (so a file it refuses is refused
here with the same message) and add what load does not keep: which keys the
file set, and which the environment overrode.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import yaml

from memoryd import config as config_mod
from memoryd import paths

FILE, ENV, DEFAULT = "file", "environment", "default"


class SettingJson(TypedDict):
    key: str
    value: object
    source: str
    meaning: str


@dataclass(frozen=True)
class Setting:
    """One setting: its dotted key, effective value, where it came from, and what it does."""

    key: str
    value: Any
    source: str
    meaning: str = ""

    def to_json(self) -> SettingJson:
        return {
            "key": self.key,
            "value": self.value,
            "source": self.source,
            "meaning": self.meaning,
        }


def file_keys(path: Path | None) -> set[str]:
    """The dotted keys a config file sets (``reports.cron``); empty when there is no file."""
    try:
        data = yaml.safe_load((path or paths.config_file()).read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        return set()
    keys = set()
    for key, value in data.items():
        keys.add(str(key))
        if isinstance(value, dict) and key != "checkouts":
            keys.update(f"{key}.{inner}" for inner in value)
    return keys


def explain(cfg: config_mod.Config, given: set[str]) -> list[Setting]:
    """Every setting of ``cfg``; ``given`` is what the file set (see :func:`file_keys`)."""
    out: list[Setting] = []

    def add(key: str, value: Any, meaning: str = "", env: str | None = None) -> None:
        # MEMORYD_* win over the file; ANTHROPIC_* only fill in what it leaves unset.
        from_env = bool(env and os.environ.get(env)) and (
            key not in given or str(env).startswith("MEMORYD_")
        )
        source = ENV if from_env else FILE if key in given else DEFAULT
        out.append(Setting(key, value, source, meaning))

    a = cfg.anthropic
    add("roots", list(cfg.roots), _roots_meaning(cfg))
    add("socket", str(cfg.socket), "where clients and the daemon meet", "MEMORYD_SOCKET")
    add("state_dir", str(cfg.state_dir), "the pidfile, and reports below it")
    add("db", str(cfg.db_path), "the index (not a file key: MEMORYD_DB or --db)", "MEMORYD_DB")
    add("reconcile_interval", cfg.reconcile_interval, "seconds between full stat scans")
    idle = cfg.request_root_idle_days
    add(
        "request_root_idle_days",
        idle,
        f"a folder only requests named: forgotten {idle:g} days after its last use",
    )
    add("settle_ms", cfg.settle_ms, "file events are gathered this long before indexing")
    o = cfg.openai
    add("shortlist", cfg.shortlist, "memories the local ranker hands the judge")
    if o.base_url:
        judge = f"the judge: {o.model} at {o.base_url} (ranker auto), local when it fails"
    else:
        judge = "no server: --ranker openai is refused"
    add("openai.base_url", o.base_url, judge)
    add("openai.model", o.model)
    add("openai.api_key", "<set>" if o.api_key else None, "sent as a bearer token when set")
    add("openai.timeout", o.timeout, "seconds the server gets per select")
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
    add("anthropic.api_key", "<set>" if a.api_key else None, ranker, "ANTHROPIC_API_KEY")
    add("anthropic.model", a.model)
    add("anthropic.base_url", a.base_url, "", "ANTHROPIC_BASE_URL")
    add("anthropic.timeout", a.timeout, "seconds Claude gets per select")
    stored = "the query text" if cfg.log_queries else "a hash and the length of each query"
    add("telemetry.log_queries", cfg.log_queries, f"selector telemetry stores {stored}")
    add("reports.cron", cfg.report_cron, _next_report(cfg.report_cron))
    add("reports.older_than_days", cfg.report_older_than_days, "sessions older than this are old")
    add("reports.keep", cfg.report_keep, "report pairs kept, newest first")
    add("reports.max_age_days", cfg.report_max_age_days, "and none older than this")
    add("checkouts", dict(cfg.checkouts), _checkouts_meaning(cfg))
    return out


def _roots_meaning(cfg: config_mod.Config) -> str:
    if cfg.roots:
        missing = [r for r in cfg.roots if not os.path.isdir(r)]
        gone = f"; not a folder: {', '.join(missing)}" if missing else ""
        return f"serve watches these instead of the default folders{gone}"
    found = sorted((paths.claude_config_dir() / "projects").glob("*/memory"))
    if found:
        return f"none set: serve watches Claude Code's {len(found)} memory folder(s)"
    return f"none set: serve watches {paths.data_memory_dir()} (no Claude Code memory folders)"


def _next_report(cron: str) -> str:
    from apscheduler.triggers.cron import CronTrigger  # noqa: PLC0415 - config check only

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


NOT_IN_FILE = ("db",)
"""Settings that only the environment or a flag sets: left out of the file's shape."""


def effective(settings: list[Setting]) -> dict[str, object]:
    """The settings the file can hold, nested as it writes them (``reports: {cron: ...}``)."""
    out: dict[str, object] = {}
    sections: dict[str, dict[str, object]] = {}
    for s in settings:
        if s.key in NOT_IN_FILE:
            continue
        section, _, key = s.key.rpartition(".")
        if not section:
            out[key] = s.value
            continue
        if section not in sections:
            sections[section] = {}
            out[section] = sections[section]
        sections[section][key] = s.value
    return out
