"""A reload replaces the judges: the old ones' HTTP clients are closed once their calls end.

Each SIGHUP builds new judges from the config; without closing the old ones every
reload would leave an HTTP client and its connection pool open for good.
"""

from __future__ import annotations

import threading

from daemon_fixtures import wait_until

from memoryd.select.judge import Judge, JudgeOutcome
from memoryd.select.selector import Selector


class Recording(Judge):
    name = "openai"

    def __init__(self, release: threading.Event) -> None:
        super().__init__(None, 5.0)
        self.release, self.closed = release, threading.Event()

    def ask(self, message: str) -> JudgeOutcome:
        self.release.wait(10)
        assert not self.closed.is_set(), "closed while a call was under way"
        return JudgeOutcome([], None, (0, 0), None)

    def close(self) -> None:
        self.closed.set()


def test_a_reload_closes_the_old_judges_after_their_calls_end() -> None:
    release = threading.Event()
    judge = Recording(release)
    selector = Selector(judges={"openai": lambda: judge})
    asked = threading.Thread(target=selector.judges.ask, args=("openai", "the message", None))
    asked.start()
    wait_until(lambda: selector.judges._made != {}, 5, "the judge built")
    selector.reconfigure(log_queries=False, judges={}, shortlist=8)
    assert not judge.closed.wait(0.2)  # its call is still under way
    release.set()
    asked.join(10)
    wait_until(judge.closed.is_set, 5, "the old judge closed")
