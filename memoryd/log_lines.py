"""One way to stderr for every log line, so no line is ever split or merged.

Library records (stdlib ``logging``, often from their own threads) are rendered by the
same processors as memoryd's events and written, like them, through one
:class:`structlog.WriteLogger`: each line, newline included, in one call under its lock.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TextIO

import structlog
from structlog.typing import Processor


class WholeLineHandler(logging.Handler):
    """A stdlib handler that renders with structlog and writes each record as one line."""

    def __init__(self, stream: TextIO, pre_chain: Sequence[Processor], renderer: Processor) -> None:
        super().__init__()
        self._out = structlog.WriteLogger(stream)
        self.setFormatter(
            structlog.stdlib.ProcessorFormatter(
                foreign_pre_chain=[structlog.stdlib.add_logger_name, *pre_chain],
                processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
            )
        )

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._out.msg(self.format(record))
        except Exception:
            self.handleError(record)
