"""structlog set-up: JSON lines for journald, readable lines on a terminal, credentials redacted.

The CLI only chooses a level (:func:`set_level`); ``serve`` imports and configures structlog
(:func:`configure`), as this module is on every command's path. Every line, a library's
stdlib record too, is written whole in one call under structlog's lock.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Mapping, MutableMapping
from typing import Any

_LEVELS = {"DEBUG": 10, "INFO": 20, "WARN": 30, "WARNING": 30, "ERROR": 40, "CRITICAL": 50}


class _Settings:
    """The level chosen for this process."""

    level: str | None = None


_settings = _Settings()


def _numeric(level: str | None) -> int:
    name = (level or os.environ.get("MEMORYD_LOG_LEVEL", "INFO")).upper()
    return _LEVELS.get(name, _LEVELS["INFO"])


def _redact_event(_logger: Any, _name: str, event: MutableMapping[str, Any]) -> Mapping[str, Any]:
    """Hide credentials in every field of every log line (queries, paths, tracebacks)."""
    from memoryd.indexer.secrets import redact_value  # noqa: PLC0415 - see the module docstring

    out: Mapping[str, Any] = redact_value(event)
    return out


LOG_BYTES = 8 << 20  # a log file past this moves to <name>.1 (one old generation is kept)


def open_log(path: str) -> int:
    """``path`` opened for appending, ``0600`` (an older log open to others is closed too: it
    holds queries); a symlink in its place is refused (``OSError``)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    os.fchmod(fd, 0o600)
    return fd


class LogFile:
    """A daemon's own log file as its stdout and stderr: appended, ``0600``, and moved to
    ``<name>.1`` once past :data:`LOG_BYTES`, checked before each line is written."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._reopen()

    def _reopen(self) -> None:
        fd = open_log(self.path)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)

    def write(self, text: str) -> int:
        if os.fstat(2).st_size > LOG_BYTES:
            sys.stderr.flush()
            os.replace(self.path, self.path + ".1")
            self._reopen()
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def configure(
    *, json: bool | None = None, level: str | None = None, log_file: str | None = None
) -> None:
    """Configure structlog (and stdlib logging, for libraries) to write to stderr, or to
    ``log_file`` (a :class:`LogFile`, which stderr then is too)."""
    import logging  # noqa: PLC0415 - see the module docstring

    import structlog  # noqa: PLC0415

    sink: Any = sys.stderr if log_file is None else LogFile(log_file)
    if json is None:
        json = not sys.stderr.isatty()
    numeric = _numeric(level)
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer()
        if json
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.format_exc_info,
        _redact_event,
    ]
    structlog.configure(
        processors=[*shared, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.WriteLoggerFactory(sink),
        cache_logger_on_first_use=False,
    )
    out = structlog.WriteLogger(sink)

    class WholeLines(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            try:
                out.msg(self.format(record))
            except Exception:
                self.handleError(record)

    handler = WholeLines()
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[structlog.stdlib.add_logger_name, *shared],
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    logging.basicConfig(level=max(numeric, logging.WARNING), handlers=[handler])
    # Each job runs one at a time and coalesces: a tick that finds it still running is
    # skipped by design, not worth a warning per second. A job's exception is still an error.
    for name in ("apscheduler.scheduler", "apscheduler.executors"):
        logging.getLogger(name).setLevel(logging.ERROR)
    # Warnings and a thread's uncaught exception become one log line each, not loose stderr.
    logging.captureWarnings(True)
    threading.excepthook = _log_thread_crash
    _settings.level = level


def _log_thread_crash(args: threading.ExceptHookArgs) -> None:
    """A thread's uncaught exception as one ``thread.crashed`` error line with its traceback."""
    if args.exc_type is SystemExit:
        return  # what the default hook does too: a thread that exits is not an error
    import structlog  # noqa: PLC0415 - configure() has imported it already

    structlog.get_logger("memoryd").error(
        "thread.crashed",
        thread=args.thread.name if args.thread is not None else None,
        exc_info=(args.exc_type, args.exc_value, args.exc_traceback),
    )


def enabled(method: str) -> bool:
    """Whether an event at ``method``'s level ("info", ...) would be written in this process."""
    return _LEVELS[method.upper()] >= _numeric(_settings.level)


def set_level(level: str) -> None:
    """Use ``level`` when structlog is configured later; nothing is imported now."""
    _settings.level = level
