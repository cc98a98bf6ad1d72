"""Every line the daemon logs is one whole JSON object, whichever thread and API wrote it.

memoryd logs through structlog while its libraries (apscheduler, watchdog,
httpx) log through stdlib ``logging``, from their own threads. The check runs
in a child process whose stderr is a file, as the daemon's is under systemd
or the test fixtures, and has many threads log through both paths at once.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

THREADS = 8
EVENTS = 300

CHILD = f"""
import logging, threading
import structlog
from memoryd import logs

logs.configure(json=True, level="DEBUG")
start = threading.Barrier({THREADS})

def work(n):
    own = structlog.get_logger("memoryd.test")
    lib = logging.getLogger("somelib.worker")
    start.wait()
    for i in range({EVENTS}):
        own.info("test.event", thread=n, i=i, padding="x" * (i % 50))
        lib.warning("library warning %d from thread %d", i, n)

threads = [threading.Thread(target=work, args=(n,)) for n in range({THREADS})]
for t in threads:
    t.start()
for t in threads:
    t.join()
"""


def test_concurrent_structlog_and_stdlib_lines_are_each_one_json_object(tmp_path: Path) -> None:
    log = tmp_path / "stderr.log"
    with log.open("ab") as err:
        subprocess.run([sys.executable, "-c", CHILD], stderr=err, check=True, timeout=120)
    events = [json.loads(line) for line in log.read_text().splitlines()]
    own = [e for e in events if e["event"] == "test.event"]
    lib = [e for e in events if e["event"].startswith("library warning")]
    assert len(own) == len(lib) == THREADS * EVENTS
    assert len(events) == 2 * THREADS * EVENTS
    assert {e["level"] for e in lib} == {"warning"}
    assert {e["logger"] for e in lib} == {"somelib.worker"}
    assert all("timestamp" in e for e in events)


CRASH_AND_WARN = """
import threading, warnings
from memoryd import logs

logs.configure(json=True, level="INFO")
def boom():
    raise ValueError("broken in a thread")
t = threading.Thread(target=boom, name="worker-7")
t.start()
t.join()
warnings.warn("an old API was used", DeprecationWarning, stacklevel=1)
"""


def test_thread_crashes_and_warnings_are_one_json_line_each(tmp_path: Path) -> None:
    log = tmp_path / "stderr.log"
    with log.open("ab") as err:
        subprocess.run(
            [sys.executable, "-W", "always", "-c", CRASH_AND_WARN],
            stderr=err,
            check=True,
            timeout=60,
        )
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(events) == 2, events
    crash, warning = events
    assert crash["event"] == "thread.crashed" and crash["level"] == "error"
    assert crash["thread"] == "worker-7"
    assert "ValueError: broken in a thread" in crash["exception"]
    assert warning["level"] == "warning" and warning["logger"] == "py.warnings"
    assert "DeprecationWarning: an old API was used" in warning["event"]


SLOW_JOB = """
import time
from apscheduler.schedulers.background import BackgroundScheduler
from memoryd import logs

logs.configure(json=True, level="INFO")
scheduler = BackgroundScheduler(job_defaults={"coalesce": True, "max_instances": 1})
def slow():
    time.sleep(1.5)

def broken():
    raise ValueError("boom")

scheduler.add_job(slow, "interval", seconds=0.2)
scheduler.add_job(broken, "interval", seconds=0.5)
scheduler.start()
time.sleep(2)
scheduler.shutdown(wait=False)
"""


def test_a_scheduled_job_still_running_at_its_next_tick_is_not_a_warning(tmp_path: Path) -> None:
    log = tmp_path / "stderr.log"
    with log.open("ab") as err:
        subprocess.run([sys.executable, "-c", SLOW_JOB], stderr=err, check=True, timeout=60)
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert not [e for e in events if "skipped" in e["event"]], events
    assert any(e["level"] == "error" and "broken" in e["event"] for e in events), events
