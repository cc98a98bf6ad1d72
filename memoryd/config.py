"""Configuration: a YAML file, completed by the environment, overridden by flags.

Precedence, as :func:`load` and ``memoryd serve`` apply it: command-line flags
win over everything; ``MEMORYD_SOCKET`` and ``MEMORYD_DB`` win over the file;
``ANTHROPIC_API_KEY`` and ``ANTHROPIC_BASE_URL`` only fill in what the file
leaves unset (the file's ``anthropic`` section wins over them).

The file lives at ``$XDG_CONFIG_HOME/memoryd/config.yaml``; every key is
optional and every mistake is an error that stops ``memoryd serve``: an
unknown key, a value of the wrong type, a cron that does not parse (a typo
should not silently do nothing, nor be found at 03:00 by a log line). All
the mistakes of a file are reported together. ``SIGHUP`` makes the daemon
read it again.

``memoryd config show`` prints every key, defaults included, in the file's
shape; ``config check`` says what each does (both from :data:`KEYS`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml

from memoryd import paths
from memoryd.bounded_read import MAX_READ_BYTES, read_capped
from memoryd.config_values import Values as _Values
from memoryd.errors import ConfigError
from memoryd.indexer.frontmatter import FrontmatterError, reject_aliases

DEFAULT_IDLE_DAYS = 3.0
"""A folder named only by requests stays watched this long after its last use."""

DEFAULT_CRON = "0 3 * * *"
"""The compaction report's schedule: every night at 03:00, local time."""

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
class OpenAIConfig:
    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    timeout: float = 5.0

    def __repr__(self) -> str:  # never print the key
        key = "set" if self.api_key else "unset"
        return f"OpenAIConfig(base_url={self.base_url!r}, model={self.model!r}, api_key=<{key}>)"


DEFAULT_SHORTLIST = 8
MAX_SHORTLIST = 20


@dataclass(frozen=True)
class Config:
    roots: tuple[str, ...] = ()
    socket: Path = field(default_factory=paths.default_socket)
    state_dir: Path = field(default_factory=paths.state_dir)
    db: Path | None = None
    reconcile_interval: float = 300.0
    request_root_idle_days: float = DEFAULT_IDLE_DAYS
    max_request_roots: int = 64
    max_connections: int = 128
    idle_timeout: float = 60.0
    settle_ms: int = 50
    shortlist: int = DEFAULT_SHORTLIST
    anthropic: AnthropicConfig = field(default_factory=AnthropicConfig)
    openai: OpenAIConfig = field(default_factory=OpenAIConfig)
    log_queries: bool = False
    telemetry_keep_days: float = 90.0
    telemetry_keep_runs: int = 100_000
    report_cron: str = DEFAULT_CRON
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


@dataclass(frozen=True)
class Key:
    """A key the file may hold: dotted as written (``reports.cron``), the :class:`Config`
    attribute that keeps its value (dotted for a judge's section), and what it does."""

    key: str
    attr: str
    meaning: str


KEYS: tuple[Key, ...] = (
    Key("roots", "roots", "the folders serve watches (default: Claude Code's memory folders)"),
    Key("socket", "socket", "where clients and the daemon meet"),
    Key("state_dir", "state_dir", "the pidfile, the index and the reports below it"),
    Key("reconcile_interval", "reconcile_interval", "seconds between full stat scans"),
    Key(
        "request_root_idle_days",
        "request_root_idle_days",
        "a folder only requests named is forgotten this many days after its last use",
    ),
    Key(
        "max_request_roots",
        "max_request_roots",
        "folders requests alone keep watched; the least recently used go first",
    ),
    Key("max_connections", "max_connections", "clients served at once; more are answered busy"),
    Key("idle_timeout", "idle_timeout", "seconds before a silent connection is closed"),
    Key("settle_ms", "settle_ms", "file events are gathered this long before indexing"),
    Key("shortlist", "shortlist", "memories the local ranker hands the judge (1-20)"),
    Key(
        "openai.base_url", "openai.base_url", "an OpenAI-compatible judge's server (wins when set)"
    ),
    Key("openai.model", "openai.model", "the model that server runs (needed with base_url)"),
    Key("openai.api_key", "openai.api_key", "sent as a bearer token when set"),
    Key("openai.timeout", "openai.timeout", "seconds the server gets per select"),
    Key("anthropic.api_key", "anthropic.api_key", "Claude as the judge (or ANTHROPIC_API_KEY)"),
    Key("anthropic.model", "anthropic.model", "the Claude model that judges"),
    Key("anthropic.base_url", "anthropic.base_url", "another address for Anthropic's API"),
    Key("anthropic.timeout", "anthropic.timeout", "seconds Claude gets per select"),
    Key(
        "telemetry.log_queries",
        "log_queries",
        "selector telemetry stores the query text, not only a hash and its length",
    ),
    Key(
        "telemetry.keep_days",
        "telemetry_keep_days",
        "selector telemetry rows older than this many days are deleted",
    ),
    Key(
        "telemetry.keep_runs",
        "telemetry_keep_runs",
        "and no more rows than this are kept (about 300 bytes each)",
    ),
    Key("reports.cron", "report_cron", "when the compaction report is written"),
    Key("reports.older_than_days", "report_older_than_days", "sessions older than this are old"),
    Key("reports.keep", "report_keep", "report pairs kept, newest first"),
    Key("reports.max_age_days", "report_max_age_days", "and none older than this many days"),
    Key("checkouts", "checkouts", "memory folder -> the checkout of the code it describes"),
)
"""Every key of the config file, in the order ``config show`` prints them: the one list
that validation, ``config check`` and ``config show`` all read."""


def _keys_in(section: str) -> set[str]:
    """The keys allowed in ``section`` ("" for the top level)."""
    if not section:
        return {k.key.partition(".")[0] for k in KEYS}
    return {k.key.partition(".")[2] for k in KEYS if k.key.startswith(section + ".")}


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


def _cron(value: str | None, values: _Values) -> str:
    """``reports.cron`` checked as the scheduler will read it: a bad one stops the start.

    ``cron:`` with no value means the default; an empty string is a mistake.
    """
    if value is None or value == DEFAULT_CRON:
        return DEFAULT_CRON
    from apscheduler.triggers.cron import CronTrigger  # noqa: PLC0415 - only a set cron needs it

    try:
        CronTrigger.from_crontab(value)
    except ValueError as exc:
        values.problem(
            f"'reports.cron' is not a cron expression ({exc}), got {value!r}; "
            'five fields: minute hour day month weekday, e.g. "0 3 * * *"'
        )
        return DEFAULT_CRON
    return value


def _section(data: Mapping[str, object], key: str, values: _Values) -> Mapping[str, object]:
    value = data.get(key) or {}
    if not isinstance(value, dict):
        values.problem(f"'{key}' must be a mapping")
        return {}
    _no_unknown(value, _keys_in(key), values, prefix=f"{key}.")
    return value


def _no_unknown(
    data: Mapping[str, object], allowed: set[str], values: _Values, prefix: str = ""
) -> None:
    unknown = sorted(set(map(str, data)) - allowed)
    if unknown:
        values.problem(f"unknown key(s): {', '.join(prefix + k for k in unknown)}")


def _from_mapping(data: Mapping[str, object], path: Path) -> Config:
    """The config ``data`` sets; every mistake in it is reported at once, in one ConfigError."""
    values = _Values(path)
    _no_unknown(data, _keys_in(""), values)
    roots = data.get("roots") or []
    if not isinstance(roots, list) or not all(isinstance(r, str) for r in roots):
        values.problem("'roots' must be a list of directory paths")
        roots = []
    anth = _section(data, "anthropic", values)
    oai = _section(data, "openai", values)
    tele = _section(data, "telemetry", values)
    reports = _section(data, "reports", values)
    checkouts = data.get("checkouts") or {}
    if not isinstance(checkouts, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in checkouts.items()
    ):
        values.problem("'checkouts' must map memory directories to checkout paths")
        checkouts = {}
    cfg = Config(
        roots=tuple(os.path.expanduser(r) for r in roots),
        reconcile_interval=values.number(data, "reconcile_interval", 300.0),
        request_root_idle_days=values.number(data, "request_root_idle_days", DEFAULT_IDLE_DAYS),
        max_request_roots=int(
            values.number(data, "max_request_roots", 64, integer=True, minimum=1)
        ),
        max_connections=int(values.number(data, "max_connections", 128, integer=True, minimum=1)),
        idle_timeout=values.number(data, "idle_timeout", 60.0),
        settle_ms=int(values.number(data, "settle_ms", 50, integer=True, minimum=0)),
        shortlist=int(
            values.number(
                data, "shortlist", DEFAULT_SHORTLIST, integer=True, minimum=1, maximum=MAX_SHORTLIST
            )
        ),
        anthropic=AnthropicConfig(
            api_key=values.text(anth, "anthropic.api_key", None),
            model=values.text(anth, "anthropic.model", DEFAULT_MODEL) or DEFAULT_MODEL,
            base_url=values.text(anth, "anthropic.base_url", None),
            timeout=values.number(anth, "anthropic.timeout", 5.0),
        ),
        openai=_openai(oai, values),
        log_queries=values.boolean(tele, "telemetry.log_queries", False),
        telemetry_keep_days=values.number(tele, "telemetry.keep_days", 90.0),
        telemetry_keep_runs=int(
            values.number(tele, "telemetry.keep_runs", 100_000, integer=True, minimum=1)
        ),
        report_cron=_cron(values.text(reports, "reports.cron", DEFAULT_CRON), values),
        report_older_than_days=int(
            values.number(reports, "reports.older_than_days", 30, integer=True)
        ),
        report_keep=int(values.number(reports, "reports.keep", 30, integer=True, minimum=1)),
        report_max_age_days=values.number(reports, "reports.max_age_days", 90.0),
        checkouts={os.path.expanduser(k): os.path.expanduser(v) for k, v in checkouts.items()},
        source=path,
    )
    if "socket" in data:
        sock = values.text(data, "socket", None) or ""
        cfg = replace(cfg, socket=Path(os.path.expanduser(sock)))
    if "state_dir" in data:
        state = values.text(data, "state_dir", None) or ""
        cfg = replace(cfg, state_dir=Path(os.path.expanduser(state)))
    values.raise_any()
    return cfg


def _openai(section: Mapping[str, object], values: _Values) -> OpenAIConfig:
    """The ``openai`` judge: a server needs a model name to be asked with."""
    cfg = OpenAIConfig(
        base_url=values.text(section, "openai.base_url", None) or None,
        model=values.text(section, "openai.model", None) or None,
        api_key=values.text(section, "openai.api_key", None) or None,
        timeout=values.number(section, "openai.timeout", 5.0),
    )
    if cfg.base_url and not cfg.model:
        values.problem(
            "'openai.model' is required with 'openai.base_url' "
            "(the model the server should run, e.g. qwen3:8b)"
        )
    if cfg.base_url and not cfg.base_url.startswith(("http://", "https://")):
        values.problem(
            f"'openai.base_url' must start with http:// or https://, got {cfg.base_url!r}"
        )
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
    """Claude Code's memory folders when there are any, else the XDG data folder (created).

    Claude Code's are found as it names them (:func:`memoryd.integrations.
    claude_folders.known_folders`): ``projects/*/memory`` under its config (or
    remote memory) dir, and the user's ``autoMemoryDirectory``.
    """
    from memoryd.claude_folders import known_folders  # noqa: PLC0415

    found = [str(p) for p in known_folders()]
    if found:
        return found
    fallback = paths.data_memory_dir()
    fallback.mkdir(parents=True, exist_ok=True)
    return [str(fallback)]
