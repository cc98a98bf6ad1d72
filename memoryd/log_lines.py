"""One way to stderr for every log line, so no line is ever split or merged.

memoryd logs through structlog; its libraries (apscheduler, watchdog, httpx,
the anthropic SDK) log through stdlib ``logging``, often from their own
threads. Both paths end in :class:`structlog.WriteLogger` on the same stream:
each line, newline included, is written in one call under the one lock
structlog keeps for that stream, so a library warning from one thread never
lands between another thread's JSON object and its newline (structlog's
PrintLogger writes the two apart, and stdlib's StreamHandler holds a lock of
its own). Library records are rendered by the same
processors as memoryd's own events, so in JSON mode every line is a JSON
object with ``event``, ``level``, ``timestamp`` and the library's ``logger``.
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
