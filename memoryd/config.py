"""Configuration: a YAML file, completed by the environment, overridden by flags.

Precedence, as :func:`load` and ``memoryd serve`` apply it: command-line flags
win over everything; ``MEMORYD_SOCKET`` and ``MEMORYD_DB`` win over the file;
``ANTHROPIC_API_KEY`` and ``ANTHROPIC_BASE_URL`` only fill in what the file
leaves unset (the file's ``anthropic`` section wins over them).

The file lives at ``$XDG_CONFIG_HOME/memoryd/config.yaml``; every key is
optional and unknown keys are errors (a typo should not silently do nothing).
``SIGHUP`` makes the daemon read it again.

Example::

    roots: [~/notes/memory]
    reconcile_interval: 300          # seconds between full stat scans
    request_root_idle_days: 3        # forget a folder only requests named, once unused this long
    anthropic:
      api_key: sk-...                # or ANTHROPIC_API_KEY
      model: claude-sonnet-5-5
      timeout: 5
    telemetry:
      log_queries: false
    reports:
      cron: "0 3 * * *"
      older_than_days: 30
      keep: 30                       # report pairs kept (newest first)
      max_age_days: 90               # and none older than this
    checkouts:                       # memory folder -> the code it describes
      ~/.claude/projects/-home-me-app/memory: ~/src/app
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from memoryd import paths
from memoryd.errors import ConfigError

DEFAULT_IDLE_DAYS = 3.0
"""A folder named only by requests stays watched this long after its last use."""

DEFAULT_MODEL = "claude-sonnet-5-5"
"""The newest Sonnet id listed in the anthropic SDK this project pins."""


@dataclass(frozen=True)
class AnthropicConfig:
    api_key: str | None = None
    model: str = DEFAULT_MODEL
    base_url: str | None = None
    timeout: float = 5.0

    def __repr__(self) -> str:  # never print the key
        key = "set" if self.api_key else "unset"
        return f"AnthropicConfig(api_key=<{key}>, model={self.model!r}, base_url={self.base_url!r})"


@dataclass(frozen=True)
class Config:
    roots: tuple[str, ...] = ()
    socket: Path = field(default_factory=paths.default_socket)
    state_dir: Path = field(default_factory=paths.state_dir)
    db: Path | None = None
    reconcile_interval: float = 300.0
    request_root_idle_days: float = DEFAULT_IDLE_DAYS
    settle_ms: int = 50
    anthropic: AnthropicConfig = field(default_factory=AnthropicConfig)
    log_queries: bool = False
    report_cron: str = "0 3 * * *"
    report_older_than_days: int = 30
    report_keep: int = 30
    report_max_age_days: float = 90.0
    checkouts: dict[str, str] = field(default_factory=dict)
    source: Path | None = None

    @property
    def db_path(self) -> Path:
        if self.db is not None:
            return self.db
        if "MEMORYD_DB" in os.environ:
            return paths.default_db()
        return self.state_dir / "index.db"

    @property
    def pidfile(self) -> Path:
        return self.state_dir / "memoryd.pid"

    @property
    def reports_dir(self) -> Path:
        return self.state_dir / "reports"


_TOP = {
    "roots",
    "socket",
    "state_dir",
    "reconcile_interval",
    "request_root_idle_days",
    "settle_ms",
    "anthropic",
    "telemetry",
    "reports",
    "checkouts",
}
_ANTHROPIC = {"api_key", "model", "base_url", "timeout"}
_TELEMETRY = {"log_queries"}
_REPORTS = {"cron", "older_than_days", "keep", "max_age_days"}


def load(path: Path | None = None) -> Config:
    """Read the config file (missing is fine when no path was given explicitly)."""
    explicit = path is not None
    path = path or paths.config_file()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if explicit:
            raise ConfigError(f"config file not found: {path}") from None
        return _with_env(Config())
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of keys to values")
    return _with_env(_from_mapping(data, path))


def _section(data: dict[str, Any], key: str, allowed: set[str], path: Path) -> dict[str, Any]:
    value = data.get(key) or {}
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: '{key}' must be a mapping")
    _no_unknown(value, allowed, path, prefix=f"{key}.")
    return value


def _no_unknown(data: dict[str, Any], allowed: set[str], path: Path, prefix: str = "") -> None:
    unknown = sorted(set(map(str, data)) - allowed)
    if unknown:
        raise ConfigError(f"{path}: unknown key(s): {', '.join(prefix + k for k in unknown)}")


def _from_mapping(data: dict[str, Any], path: Path) -> Config:
    _no_unknown(data, _TOP, path)
    roots = data.get("roots") or []
    if not isinstance(roots, list) or not all(isinstance(r, str) for r in roots):
        raise ConfigError(f"{path}: 'roots' must be a list of directory paths")
    anth = _section(data, "anthropic", _ANTHROPIC, path)
    tele = _section(data, "telemetry", _TELEMETRY, path)
    reports = _section(data, "reports", _REPORTS, path)
    checkouts = data.get("checkouts") or {}
    if not isinstance(checkouts, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in checkouts.items()
    ):
        raise ConfigError(f"{path}: 'checkouts' must map memory directories to checkout paths")
    try:
        cfg = Config(
            roots=tuple(os.path.expanduser(r) for r in roots),
            reconcile_interval=float(data.get("reconcile_interval", 300)),
            request_root_idle_days=float(data.get("request_root_idle_days", DEFAULT_IDLE_DAYS)),
            settle_ms=int(data.get("settle_ms", 50)),
            anthropic=AnthropicConfig(
                api_key=anth.get("api_key"),
                model=str(anth.get("model", DEFAULT_MODEL)),
                base_url=anth.get("base_url"),
                timeout=float(anth.get("timeout", 5.0)),
            ),
            log_queries=bool(tele.get("log_queries", False)),
            report_cron=str(reports.get("cron", "0 3 * * *")),
            report_older_than_days=int(reports.get("older_than_days", 30)),
            report_keep=int(reports.get("keep", 30)),
            report_max_age_days=float(reports.get("max_age_days", 90)),
            checkouts={os.path.expanduser(k): os.path.expanduser(v) for k, v in checkouts.items()},
            source=path,
        )
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    if "socket" in data:
        cfg = replace(cfg, socket=Path(os.path.expanduser(str(data["socket"]))))
    if "state_dir" in data:
        cfg = replace(cfg, state_dir=Path(os.path.expanduser(str(data["state_dir"]))))
    if cfg.reconcile_interval <= 0:
        raise ConfigError(f"{path}: 'reconcile_interval' must be positive")
    if cfg.report_keep < 1 or cfg.report_max_age_days <= 0:
        raise ConfigError(f"{path}: 'reports.keep' must be >= 1 and 'reports.max_age_days' > 0")
    if cfg.request_root_idle_days <= 0:
        raise ConfigError(f"{path}: 'request_root_idle_days' must be positive")
    return cfg


def _with_env(cfg: Config) -> Config:
    key = os.environ.get("ANTHROPIC_API_KEY")
    if key and not cfg.anthropic.api_key:
        cfg = replace(cfg, anthropic=replace(cfg.anthropic, api_key=key))
    base = os.environ.get("ANTHROPIC_BASE_URL")
    if base and not cfg.anthropic.base_url:
        cfg = replace(cfg, anthropic=replace(cfg.anthropic, base_url=base))
    if "MEMORYD_SOCKET" in os.environ:
        cfg = replace(cfg, socket=paths.default_socket())
    return cfg


def default_roots() -> list[str]:
    """Claude Code's memory folders when there are any, else the XDG data folder (created)."""
    projects = paths.claude_config_dir() / "projects"
    found = sorted(str(p) for p in projects.glob("*/memory") if p.is_dir())
    if found:
        return found
    fallback = paths.data_memory_dir()
    fallback.mkdir(parents=True, exist_ok=True)
    return [str(fallback)]
