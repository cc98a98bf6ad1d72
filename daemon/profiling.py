"""An opt-in CPU profile of the whole daemon, for finding per-request costs.

``cProfile`` only sees the thread that enabled it, and the daemon's work is
spread over a thread per connection, the writer and the watcher. With
``MEMORYD_PROFILE=/some/file.pstats`` set, :func:`install` gives every thread
started afterwards (and the calling one) its own profiler and, at exit, merges
them into one ``pstats`` file to read with ``python -m pstats`` (times are each
thread's CPU time). Unset, nothing is imported or wrapped: the daemon pays
nothing.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from typing import Any

ENV = "MEMORYD_PROFILE"


def install() -> None:
    """Profile every thread from now on when ``MEMORYD_PROFILE`` names an output file."""
    out = os.environ.get(ENV)
    if not out:
        return
    import cProfile  # noqa: PLC0415 - only a profiled daemon pays for it

    profiles: list[cProfile.Profile] = []
    lock = threading.Lock()
    plain_run = threading.Thread.run

    def start() -> cProfile.Profile:
        # Thread CPU time, not wall time: a thread waiting for the interpreter
        # lock or a socket is not charged, so the figures add up to the CPU used.
        prof = cProfile.Profile(time.thread_time)
        with lock:
            profiles.append(prof)
        prof.enable()
        return prof

    def profiled_run(self: threading.Thread) -> None:
        prof = start()
        try:
            plain_run(self)
        finally:
            prof.disable()

    def dump() -> None:
        import pstats  # noqa: PLC0415

        main.disable()
        with lock:
            taken = list(profiles)
        stats: Any = None
        for prof in taken:
            stats = pstats.Stats(prof) if stats is None else stats.add(prof)
        stats.dump_stats(out)

    threading.Thread.run = profiled_run  # type: ignore[method-assign]
    main = start()
    atexit.register(dump)
