"""One request at a time through the interpreter, in arrival order, with bounded patience.

Answering a request is nearly all Python (ranking, JSON), so the interpreter
lock lets only one connection thread make progress at a time anyway. When
many threads run at once they convoy: every SQLite step and socket call
releases the lock, another thread takes it, and each hand-over costs a kernel
wake-up and a context switch. With 16 clients that cost the daemon ~0.3 ms of
system CPU per select (1.0-1.3 ms instead of ~0.7 ms; docs/benchmarks.md,
"16 clients, fourth pass").

:class:`Turnstile` lets one request in at a time and hands the turn straight
to the longest waiter (first come, first served, so no request starves). A
waiter gives up after ``patience`` seconds and runs alongside the holder, as
without the turnstile: a slow request (a call to the Anthropic API, a folder's
first load) delays the others by at most that much.
"""

from __future__ import annotations

import threading
from collections import deque

PATIENCE_S = 0.05


class Turnstile:
    def __init__(self, patience: float = PATIENCE_S) -> None:
        self.patience = patience
        self._lock = threading.Lock()
        self._busy = False
        self._waiters: deque[threading.Lock] = deque()

    @property
    def waiting(self) -> int:
        """Threads waiting for the turn now."""
        with self._lock:
            return len(self._waiters)

    def enter(self) -> bool:
        """Wait for the turn (up to ``patience``); True when this thread holds it.

        A caller that got True must call :meth:`leave` when done; one that got
        False runs without the turn and must not.
        """
        with self._lock:
            if not self._busy:
                self._busy = True
                return True
            ticket = threading.Lock()
            ticket.acquire()
            self._waiters.append(ticket)
        if ticket.acquire(timeout=self.patience):
            return True  # handed over by leave()
        with self._lock:
            if ticket in self._waiters:
                self._waiters.remove(ticket)
                return False
        return True  # leave() handed it over just as the wait timed out

    def leave(self) -> None:
        """Pass the turn to the longest waiter, or free it."""
        with self._lock:
            if self._waiters:
                self._waiters.popleft().release()  # the turn moves on: still busy
            else:
                self._busy = False
