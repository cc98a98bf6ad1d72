"""An opt-in CPU profile of every daemon thread (``MEMORYD_PROFILE=file.pstats``), for development.

Each thread started after :func:`install` gets its own profiler of its CPU time;
at exit they are merged into one ``pstats`` file. Unset, nothing is imported.
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
