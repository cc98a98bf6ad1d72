"""structlog set-up: JSON lines for journald, readable lines on a terminal."""

from __future__ import annotations

import logging
import os
import sys

import structlog

from memoryd.indexer.secrets import redact_value


def _redact_event(
    _logger: object, _name: str, event: structlog.typing.EventDict
) -> structlog.typing.EventDict:
    """Hide credentials in every field of every log line (queries, paths, tracebacks)."""
    out: structlog.typing.EventDict = redact_value(event)
    return out


def configure(*, json: bool | None = None, level: str | None = None) -> None:
    """Configure structlog (and stdlib logging, for libraries) to write to stderr."""
    if json is None:
        json = not sys.stderr.isatty()
    level_name = (level or os.environ.get("MEMORYD_LOG_LEVEL", "INFO")).upper()
    numeric = logging.getLevelNamesMapping().get(level_name, logging.INFO)
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer()
        if json
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            _redact_event,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=False,
    )
    logging.basicConfig(level=max(numeric, logging.WARNING), stream=sys.stderr)
