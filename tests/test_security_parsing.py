"""Hostile files: alias bombs in session headers and config, wrong-typed config values."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd import config
from memoryd.errors import ConfigError
from memoryd.indexer.parse import parse_bytes
from memoryd.indexer.records import KIND_MEMORY, KIND_SESSION

# Nine aliases per level, eight levels: 9**8 (43 million) strings once expanded.
_LEVELS = ["a: &a [x, x, x, x, x, x, x, x, x]"] + [
    f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 9) + "]" for i in range(7)
]
BOMB = "\n".join(_LEVELS) + "\n"


@pytest.mark.parametrize("kind", [KIND_SESSION, KIND_MEMORY])
def test_an_alias_bomb_header_is_indexed_as_an_error(kind: str) -> None:
    data = f"---\nproject-name: shop\ndescription: bomb\n{BOMB}---\n## Session summary\nx\n"
    assert len(data) < 600
    parsed = parse_bytes(data.encode(), kind)
    assert parsed.error is not None and "aliases are not allowed" in parsed.error
    assert parsed.meta is None or parsed.meta == {}


def test_an_anchor_without_alias_still_parses() -> None:
    data = b"---\nproject-name: shop\nstatus: &s done\n---\n## Session summary\nok\n"
    parsed = parse_bytes(data, KIND_SESSION)
    assert parsed.error is None and parsed.meta is not None and parsed.meta["status"] == "done"


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_an_alias_bomb_in_the_config_is_a_config_error(tmp_path: Path) -> None:
    path = write_config(tmp_path, "roots: []\nx:\n" + "".join(f"  {line}\n" for line in _LEVELS))
    with pytest.raises(ConfigError, match="aliases are not allowed"):
        config.load(path)


@pytest.mark.parametrize(
    ("text", "key", "expected"),
    [
        ('telemetry: {log_queries: "false"}', "telemetry.log_queries", "true or false"),
        ("telemetry: {log_queries: 1}", "telemetry.log_queries", "true or false"),
        ("reconcile_interval: .inf", "reconcile_interval", "a positive number"),
        ("reconcile_interval: .nan", "reconcile_interval", "a positive number"),
        ('reconcile_interval: "300"', "reconcile_interval", "a positive number"),
        ("reconcile_interval: -1", "reconcile_interval", "positive"),
        ("settle_ms: 2.5", "settle_ms", "a whole number"),
        ("anthropic: {timeout: .inf}", "anthropic.timeout", "a positive number"),
        ("anthropic: {model: 3}", "anthropic.model", "a string"),
        ("reports: {older_than_days: yes}", "reports.older_than_days", "a whole number"),
        ("socket: [a]", "socket", "a string"),
    ],
)
def test_a_wrong_typed_config_value_is_an_error_naming_the_key(
    tmp_path: Path, text: str, key: str, expected: str
) -> None:
    with pytest.raises(ConfigError, match=f"'{key}' must be {expected}"):
        config.load(write_config(tmp_path, text + "\n"))


def test_correct_config_values_load(tmp_path: Path) -> None:
    cfg = config.load(
        write_config(
            tmp_path,
            "telemetry: {log_queries: true}\nreconcile_interval: 60\nsettle_ms: 0\n"
            "reports: {older_than_days: 7}\nanthropic: {timeout: 2.5}\n",
        )
    )
    assert cfg.log_queries is True and cfg.reconcile_interval == 60.0 and cfg.settle_ms == 0
    assert cfg.report_older_than_days == 7 and cfg.anthropic.timeout == 2.5
