"""The smaller leaks: a clock set back, telemetry without bound."""

from __future__ import annotations

import datetime as dt
import time
import uuid
from pathlib import Path

from daemon_fixtures import composed

from memoryd.config import Config
from memoryd.daemon import reporter
from memoryd.daemon.maintenance import WallClock
from memoryd.indexer.store import IndexStore
from memoryd.select import telemetry
from memoryd.select.wiring import record_runs


def test_a_clock_set_back_is_noticed_and_slewing_is_not() -> None:
    wall, mono = [1_000_000.0], [50.0]
    clock = WallClock(lambda: wall[0], lambda: mono[0])
    wall[0] += 10
    mono[0] += 10
    assert not clock.went_back()
    wall[0] -= 5  # NTP slewing, seconds
    assert not clock.went_back()
    wall[0] -= 86_400  # set back a day
    mono[0] += 1
    assert clock.went_back()
    assert not clock.went_back()  # once


def test_the_jobs_are_rescheduled_from_now_after_the_clock_went_back(tmp_path: Path) -> None:
    cfg = Config(
        report_cron="0 3 * * *",
        socket=tmp_path / "s.sock",
        state_dir=tmp_path,
        db=tmp_path / "index.db",
    )
    with composed(cfg) as parts:
        parts.scheduler.start(paused=True)
        parts.schedule()
        job = parts.scheduler.get_job(reporter.JOB_ID)
        # What the clock going back a day leaves: a next run more than a day ahead.
        now = dt.datetime.now(job.next_run_time.tzinfo)
        job.modify(next_run_time=job.next_run_time + dt.timedelta(days=1))
        parts.scheduler.get_job("reconcile").modify(next_run_time=now + dt.timedelta(days=2))
        assert job.next_run_time - now > dt.timedelta(days=1)
        parts.schedule()
        job = parts.scheduler.get_job(reporter.JOB_ID)
        assert job.next_run_time - now <= dt.timedelta(days=1)
        reconcile = parts.scheduler.get_job("reconcile").next_run_time
        assert reconcile - now < dt.timedelta(days=1)


def _run(at: float) -> telemetry.RunRecord:
    record = telemetry.make_record(
        run_id=uuid.uuid4().hex,
        directory="/m",
        query="q",
        session_id=None,
        log_queries=False,
        latency_ms=1.0,
    )
    record["at"] = at
    return record


def test_selector_runs_are_kept_by_age_and_by_count(tmp_path: Path) -> None:
    store = IndexStore(tmp_path / "index.db")
    try:
        now = time.time()
        retention = telemetry.Retention(keep_runs=50, keep_days=7)
        old = [_run(now - 30 * 86400 + i) for i in range(20)]
        record_runs(store, old, retention)
        assert store.conn.execute("SELECT count(*) FROM selector_runs").fetchone()[0] == 0
        for batch in range(30):
            record_runs(store, [_run(now + batch * 10 + i) for i in range(10)], retention)
            count = store.conn.execute("SELECT count(*) FROM selector_runs").fetchone()[0]
            assert count <= 50 + 50 // 10 + 10  # the count is enforced every tenth of it
        newest = store.conn.execute("SELECT max(at) FROM selector_runs").fetchone()[0]
        assert newest == now + 29 * 10 + 9  # what goes is the oldest
    finally:
        store.close()
