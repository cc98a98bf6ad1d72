"""Every config key is checked and shown from one list; a file's mistakes are reported at once."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest
from test_cli_config import config_file, run  # noqa: F401 - the fixture, used by name

from memoryd import config as config_mod
from memoryd.config import KEYS, Config

NOT_FILE_KEYS = {"db", "source", "given"}
"""Config fields no file key sets: the index path (MEMORYD_DB, --db), where and what was read."""


def test_every_config_field_has_a_key_that_says_what_it_does() -> None:
    attrs = {key.attr.partition(".")[0] for key in KEYS}
    assert {f.name for f in fields(Config)} - NOT_FILE_KEYS == attrs
    for section, cls in (
        ("anthropic", config_mod.AnthropicConfig),
        ("openai", config_mod.OpenAIConfig),
    ):
        inner = {key.attr.partition(".")[2] for key in KEYS if key.attr.startswith(section + ".")}
        assert inner == {f.name for f in fields(cls)}
    assert all(key.meaning for key in KEYS)
    cfg = Config()
    for key in KEYS:
        config_mod.value_of(cfg, key)  # every attr resolves


def test_check_and_show_cover_every_key(
    config_file: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "config", "check", "--json")
    assert code == 0
    settings = {s["key"]: s for s in json.loads(out)["settings"]}
    assert set(settings) == {key.key for key in KEYS} | {"db"}
    assert all(s["meaning"] for s in settings.values())
    code, out, _ = run(capsys, "config", "check")
    for name in ("max_request_roots", "max_connections", "idle_timeout", "telemetry.keep_days"):
        assert f"  {name} = " in out
    code, out, _ = run(capsys, "config", "show", "--json")
    shown = json.loads(out)
    for key in KEYS:
        section, _, inner = key.key.rpartition(".")
        assert inner in (shown[section] if section else shown), key.key


def test_every_mistake_in_a_file_is_reported_at_once(
    config_file: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    config_file.write_text(
        "colour: blue\nmax_connections: many\n"
        'telemetry:\n  keep_runs: 0\n  log_queries: "yes"\nreports:\n  cron: "every night"\n'
    )
    code, out, err = run(capsys, "config", "check")
    assert (code, out) == (1, "")
    assert err.count("\n") == 1
    for fragment in (
        "unknown key(s): colour",
        "'max_connections' must be a whole number, got str 'many'",
        "'telemetry.keep_runs' must be at least 1, got 0",
        "'telemetry.log_queries' must be true or false (unquoted), got str 'yes'",
        "'reports.cron' is not a cron expression",
    ):
        assert fragment in err
