"""Configuration: a YAML file, completed by the environment, overridden by flags.

Flags win over everything; ``MEMORYD_SOCKET`` and ``MEMORYD_DB`` win over the file;
``ANTHROPIC_API_KEY`` and ``ANTHROPIC_BASE_URL`` only fill in what the file leaves unset.
The file and each of its :data:`KEYS` are optional; every mistake in it (an unknown key, a
value of the wrong type or out of range, a cron that does not parse) is reported, all of
them together, in one :class:`ConfigError`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

import yaml
from apscheduler.triggers.cron import CronTrigger

from memoryd import paths
from memoryd.bounded_read import MAX_READ_BYTES, read_capped
from memoryd.claude_folders import known_folders
from memoryd.errors import ConfigError
from memoryd.indexer.frontmatter import FrontmatterError, reject_aliases

DEFAULT_CRON = "0 3 * * *"
DEFAULT_MODEL = "claude-sonnet-5-5"
"""The newest Sonnet id listed in the anthropic SDK this project pins."""
DEFAULT_SHORTLIST = 8


def setting(
    meaning: str,
    default: Any = None,
    *,
    factory: Callable[[], Any] | None = None,
    key: str = "",
    minimum: float | None = None,
    maximum: float | None = None,
    env: str = "",
    secret: bool = False,
) -> Any:
    """A field that is a key of the file: what it does, its default, its dotted ``key`` when
    that is not the field's path. A number below ``minimum`` (without one: not positive) or
    above ``maximum`` is a mistake. ``env`` can set it; a ``secret`` is shown as ``<set>``."""
    meta = dict(meaning=meaning, key=key, minimum=minimum, maximum=maximum, env=env, secret=secret)
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta, repr=not secret)


@dataclass(frozen=True)
class OpenAIConfig:
    base_url: str | None = setting("an OpenAI-compatible judge's server (wins when set)")
    model: str | None = setting("the model that server runs (needed with base_url)")
    api_key: str | None = setting("sent as a bearer token when set", secret=True)
    timeout: float = setting("seconds the server gets per select", 5.0)


@dataclass(frozen=True)
class AnthropicConfig:
    api_key: str | None = setting(
        "Claude as the judge (or ANTHROPIC_API_KEY)", env="ANTHROPIC_API_KEY", secret=True
    )
    model: str = setting("the Claude model that judges", DEFAULT_MODEL)
    base_url: str | None = setting("another address for Anthropic's API", env="ANTHROPIC_BASE_URL")
    timeout: float = setting("seconds Claude gets per select", 5.0)


@dataclass(frozen=True)
class Config:
    """The settings, in the order ``config show`` prints them, then what no file key sets."""

    roots: tuple[str, ...] = setting(
        "the folders serve watches (default: Claude Code's memory folders)", ()
    )
    socket: Path = setting(
        "where clients and the daemon meet", factory=paths.default_socket, env="MEMORYD_SOCKET"
    )
    state_dir: Path = setting(
        "the pidfile, the index and the reports below it", factory=paths.state_dir
    )
    reconcile_interval: float = setting("seconds between full stat scans", 300.0)
    request_root_idle_days: float = setting(
        "a folder only requests named is forgotten this many days after its last use", 3.0
    )
    max_request_roots: int = setting(
        "folders requests alone keep watched; the least recently used go first", 64, minimum=1
    )
    max_connections: int = setting("clients served at once; more are answered busy", 128, minimum=1)
    idle_timeout: float = setting("seconds before a silent connection is closed", 60.0)
    settle_ms: int = setting("file events are gathered this long before indexing", 50, minimum=0)
    shortlist: int = setting(
        "memories the local ranker hands the judge (1-20)",
        DEFAULT_SHORTLIST,
        minimum=1,
        maximum=20,
    )
    openai: OpenAIConfig = field(default_factory=OpenAIConfig)
    anthropic: AnthropicConfig = field(default_factory=AnthropicConfig)
    log_queries: bool = setting(
        "selector telemetry stores the query text, not only a hash and its length",
        False,
        key="telemetry.log_queries",
    )
    telemetry_keep_days: float = setting(
        "selector telemetry rows older than this many days are deleted",
        90.0,
        key="telemetry.keep_days",
    )
    telemetry_keep_runs: int = setting(
        "and no more rows than this are kept (about 300 bytes each)",
        100_000,
        key="telemetry.keep_runs",
        minimum=1,
    )
    report_cron: str = setting(
        "when the compaction report is written", DEFAULT_CRON, key="reports.cron"
    )
    report_older_than_days: int = setting(
        "sessions older than this are old", 30, key="reports.older_than_days"
    )
    report_keep: int = setting("report pairs kept, newest first", 30, key="reports.keep", minimum=1)
    report_max_age_days: float = setting(
        "and none older than this many days", 90.0, key="reports.max_age_days"
    )
    checkouts: dict[str, str] = setting(
        "memory folder -> the checkout of the code it describes", factory=dict
    )
    db: Path | None = None
    source: Path | None = None
    given: frozenset[str] = field(default=frozenset(), compare=False, repr=False)
    """The dotted keys the file sets (``reports.cron``)."""

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


class Key(NamedTuple):
    """A key of the file (:func:`setting`), and the :class:`Config` attribute path it sets."""

    key: str
    meaning: str
    attr: str
    minimum: float | None
    maximum: float | None
    env: str
    secret: bool


def _keys(cls: Any, prefix: str = "") -> Iterator[Key]:
    for f in fields(cls):
        factory: Any = f.default_factory
        if f.metadata:
            attr = prefix + f.name
            yield Key(**{**f.metadata, "key": f.metadata["key"] or attr, "attr": attr})
        elif is_dataclass(factory):
            yield from _keys(factory, f"{f.name}.")


KEYS: tuple[Key, ...] = tuple(_keys(Config))
"""Every key of the config file, in the order ``config show`` prints them."""
SECTIONS = ("anthropic", "openai", "telemetry", "reports")


def value_of(cfg: Config, key: Key) -> object:
    """``cfg``'s value for ``key``."""
    value: object = cfg
    for part in key.attr.split("."):
        value = getattr(value, part)
    return value


def load(path: Path | None = None) -> Config:
    """Read the config file (missing is fine when no path was given explicitly)."""
    explicit = path is not None
    path = path or paths.config_file()
    try:
        raw, more = read_capped(str(path))
        text = raw.decode("utf-8")
    except FileNotFoundError:
        if explicit:
            raise ConfigError(f"config file not found: {path}") from None
        return _with_env(Config())
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not valid UTF-8 at byte {exc.start}") from None
    if more:
        raise ConfigError(f"{path}: over {MAX_READ_BYTES // 1024} KiB; this is not a config file")
    try:
        reject_aliases(text, first_line=1)
        data = yaml.safe_load(text) or {}
    except FrontmatterError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML{_where(exc)}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of keys to values")
    return _with_env(_from_mapping(data, path))


def _where(exc: yaml.YAMLError) -> str:
    """``at line L, column C: problem`` on one line (PyYAML's own text spans several)."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return f"{at}: {problem}"


def _wrong(key: Key, expected: str, value: object) -> str:
    return f"'{key.key}' must be {expected}, got {type(value).__name__} {value!r}"


def _read(value: object, key: Key, default: object, problems: list[str]) -> Any:
    """``value`` of ``key`` checked against its default's type (nothing is coerced:
    ``bool("false")`` is True); a value with a problem reads as its default, so one pass
    finds every problem of a file."""
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        problems.append(_wrong(key, "true or false (unquoted)", value))
        return default
    if isinstance(default, int | float):
        return _number(value, key, default, problems)
    if value is not None and not isinstance(value, str):
        problems.append(_wrong(key, "a string", value))
        value = None
    if isinstance(default, Path):
        return Path(os.path.expanduser(value)) if value else default
    return value or default


def _number(value: object, key: Key, default: float, problems: list[str]) -> float:
    integer = isinstance(default, int)
    if (
        isinstance(value, bool)
        or not isinstance(value, int if integer else int | float)
        or not math.isfinite(value)
    ):
        problems.append(_wrong(key, "a whole number" if integer else "a positive number", value))
        return default
    low, high = key.minimum, key.maximum
    if (value <= 0 if low is None else value < low) or (high is not None and value > high):
        bound = f"at least {low:g}" if low is not None else "positive"
        if high is not None:
            bound = f"from {low or 0:g} to {high:g}"
        problems.append(f"'{key.key}' must be {bound}, got {value!r}")
        return default
    return value if integer else float(value)


def _cron(value: str, problems: list[str]) -> str:
    """``reports.cron`` checked as the scheduler will read it (``cron:`` alone is the default)."""
    try:
        CronTrigger.from_crontab(value)
    except ValueError as exc:
        problems.append(
            f"'reports.cron' is not a cron expression ({exc}), got {value!r}; "
            'five fields: minute hour day month weekday, e.g. "0 3 * * *"'
        )
        return DEFAULT_CRON
    return value


def _allowed(section: str) -> set[str]:
    """The keys allowed in ``section`` ("" for the top level)."""
    if not section:
        return {k.key.partition(".")[0] for k in KEYS}
    return {k.key.partition(".")[2] for k in KEYS if k.key.startswith(section + ".")}


def _no_unknown(data: Mapping[str, object], section: str, problems: list[str]) -> None:
    unknown = sorted(set(map(str, data)) - _allowed(section))
    prefix = f"{section}." if section else ""
    if unknown:
        problems.append(f"unknown key(s): {', '.join(prefix + k for k in unknown)}")


def _from_mapping(data: Mapping[str, object], path: Path) -> Config:
    """The config ``data`` sets; every mistake in it is reported at once, in one ConfigError."""
    problems: list[str] = []
    _no_unknown(data, "", problems)
    sections: dict[str, Mapping[str, object]] = {"": data}
    for name in SECTIONS:
        section = data.get(name) or {}
        if not isinstance(section, dict):
            problems.append(f"'{name}' must be a mapping")
            section = {}
        _no_unknown(section, name, problems)
        sections[name] = section
    defaults, found, given = Config(), dict[str, Any](), set[str]()
    for key in KEYS:
        section_name, _, name = key.key.rpartition(".")
        if name not in sections[section_name]:
            continue
        given.add(key.key)
        if key.key not in ("roots", "checkouts"):  # checked below
            value = sections[section_name][name]
            found[key.attr] = _read(value, key, value_of(defaults, key), problems)
    roots = data.get("roots") or []
    if not isinstance(roots, list) or not all(isinstance(r, str) for r in roots):
        problems.append("'roots' must be a list of directory paths")
        roots = []
    checkouts = data.get("checkouts") or {}
    if not isinstance(checkouts, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in checkouts.items()
    ):
        problems.append("'checkouts' must map memory directories to checkout paths")
        checkouts = {}
    cron = sections["reports"].get("cron")
    if isinstance(cron, str) and cron != DEFAULT_CRON:
        found["report_cron"] = _cron(cron, problems)
    judge = {
        name: {a.partition(".")[2]: v for a, v in found.items() if a.startswith(name + ".")}
        for name in ("anthropic", "openai")
    }
    oai = OpenAIConfig(**judge["openai"])
    if oai.base_url and not oai.model:
        problems.append(
            "'openai.model' is required with 'openai.base_url' "
            "(the model the server should run, e.g. qwen3:8b)"
        )
    if oai.base_url and not oai.base_url.startswith(("http://", "https://")):
        problems.append(
            f"'openai.base_url' must start with http:// or https://, got {oai.base_url!r}"
        )
    if problems:
        raise ConfigError(f"{path}: {'; '.join(problems)}")
    return Config(
        **{a: v for a, v in found.items() if "." not in a},
        roots=tuple(os.path.expanduser(r) for r in roots),
        anthropic=AnthropicConfig(**judge["anthropic"]),
        openai=oai,
        checkouts={os.path.expanduser(k): os.path.expanduser(v) for k, v in checkouts.items()},
        source=path,
        given=frozenset(given),
    )


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
    """Claude Code's memory folders (:func:`known_folders`), else the XDG data folder (created)."""
    found = [str(p) for p in known_folders()]
    if found:
        return found
    fallback = paths.data_memory_dir()
    fallback.mkdir(parents=True, exist_ok=True)
    return [str(fallback)]
