"""Compaction reports in the daemon: the scheduled job, and the writer of ``report``'s.

The job runs on ``reports.cron`` (local time), or every ``MEMORYD_REPORT_INTERVAL``
seconds. A request waits for a running report; a scheduled run finding one is skipped.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

import structlog
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from memoryd.config import Config
from memoryd.daemon.index import Readers
from memoryd.daemon.lifecycle import Job
from memoryd.replies import FeatureStatus, LastReport, ReportResult, ReportSchedule
from memoryd.report import Retention, produce
from memoryd.report.findings import DAY

INTERVAL_ENV = "MEMORYD_REPORT_INTERVAL"
JOB_ID = "compaction-report"

log = structlog.get_logger("memoryd.report")


def schedule_for(cfg: Config) -> tuple[BaseTrigger | None, ReportSchedule]:
    """The trigger and its description for ``status``; a bad cron or interval is logged, has
    no trigger, and is described as an error."""
    interval = os.environ.get(INTERVAL_ENV)
    try:
        if interval:
            seconds = float(interval)
            if seconds <= 0:
                raise ValueError(f"{INTERVAL_ENV} must be a positive number of seconds")
            return IntervalTrigger(seconds=seconds), {"interval_s": seconds}
        return CronTrigger.from_crontab(cfg.report_cron), {"cron": cfg.report_cron}
    except ValueError as exc:
        log.error("report.bad_schedule", cron=cfg.report_cron, error=str(exc))
        return None, {"error": str(exc)}


class Reporter:
    """Runs reports for the daemon, one at a time, and records the last one for ``status``."""

    def __init__(self, cfg: Config, roots: Callable[[], list[str]], readers: Readers) -> None:
        self._cfg = cfg
        self._roots = roots
        self._readers = readers
        self._lock = threading.Lock()
        self._last: LastReport | None = None
        self._schedule = schedule_for(cfg)[1]

    def status(self) -> FeatureStatus:
        """``last_report`` (once one ran) and ``report_schedule``."""
        found: FeatureStatus = {} if self._last is None else {"last_report": self._last}
        found["report_schedule"] = self._schedule
        return found

    def default_older_than_s(self) -> float:
        return self._cfg.report_older_than_days * DAY

    def run(self, dirs: list[str], older_than_s: float, trigger: str) -> ReportResult:
        with self._lock:
            return self._run(dirs, older_than_s, trigger)

    def scheduled(self) -> None:
        """The cron job: every root, the configured threshold; skipped if a report is running."""
        if not self._lock.acquire(blocking=False):
            log.info("report.skipped", reason="a report is already running")
            return
        try:
            self._run(self._roots(), self.default_older_than_s(), "schedule")
        except Exception as exc:
            log.error("report.failed", trigger="schedule", error=str(exc))
        finally:
            self._lock.release()

    def _run(self, dirs: list[str], older_than_s: float, trigger: str) -> ReportResult:
        started = time.perf_counter()
        log.info("report.started", trigger=trigger, roots=dirs)
        cfg = self._cfg
        result = produce(
            self._readers.conn(), dirs, older_than_s, cfg.reports_dir, Retention.of(cfg)
        )
        seconds = round(time.perf_counter() - started, 4)
        self._last = {
            "at": result["at"],
            "path": result["path"],
            "json": result["json"],
            "trigger": trigger,
            "seconds": seconds,
        }
        log.info(
            "report.finished",
            trigger=trigger,
            path=result["path"],
            seconds=seconds,
            **result["summary"],
        )
        return {**result, "seconds": seconds}

    def reconfigure(self, cfg: Config) -> None:
        """SIGHUP: the new schedule, installed with the daemon's jobs."""
        self._cfg = cfg
        self._schedule = schedule_for(cfg)[1]

    def jobs(self) -> list[Job]:
        """The report's job from a fresh trigger; none while its schedule is refused."""
        trigger = None if "error" in self._schedule else schedule_for(self._cfg)[0]
        return [] if trigger is None else [Job(JOB_ID, self.scheduled, trigger)]
