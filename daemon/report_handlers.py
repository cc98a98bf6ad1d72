"""Compaction reports in the daemon: a scheduled job, and the writer of ``report``'s.

The job runs on ``reports.cron`` from the config (default ``0 3 * * *``, local
time) through the daemon's apscheduler, whose job defaults make it coalesced
(missed runs collapse into one), one at a time, and still run after a missed
start within the misfire grace. A ``report`` request and a scheduled run
share one lock, so two reports are never written at once: a request waits
for a running report, a scheduled run that finds one running is skipped.

For tests and for trying the schedule out, the environment variable
``MEMORYD_REPORT_INTERVAL`` (seconds, e.g. ``0.5``) replaces the cron with an
interval trigger.

The last report's time and paths appear in ``status`` as ``last_report``,
and the schedule as ``report_schedule``.
"""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING, Any, cast

import structlog
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from memoryd.config import Config
from memoryd.replies import ReportResult
from memoryd.report import Retention, produce
from memoryd.report.sessions import DAY

if TYPE_CHECKING:
    from memoryd.daemon.app import Daemon

INTERVAL_ENV = "MEMORYD_REPORT_INTERVAL"
JOB_ID = "compaction-report"

log = structlog.get_logger("memoryd.report")


def schedule_for(cfg: Config) -> tuple[BaseTrigger, dict[str, Any]]:
    """The trigger and its description for ``status``; ValueError for a bad cron or interval."""
    interval = os.environ.get(INTERVAL_ENV)
    if interval:
        seconds = float(interval)
        if seconds <= 0:
            raise ValueError(f"{INTERVAL_ENV} must be a positive number of seconds")
        return IntervalTrigger(seconds=seconds), {"interval_s": seconds}
    return CronTrigger.from_crontab(cfg.report_cron), {"cron": cfg.report_cron}


class Reporter:
    """Runs reports for the daemon, one at a time, and records the last one."""

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon
        self._lock = threading.Lock()

    def default_older_than_s(self) -> float:
        return self.daemon.cfg.report_older_than_days * DAY

    def run(self, dirs: list[str], older_than_s: float, trigger: str) -> ReportResult:
        with self._lock:
            return self._run(dirs, older_than_s, trigger)

    def scheduled(self) -> None:
        """The cron job: every root, the configured threshold; skipped if a report is running."""
        if not self._lock.acquire(blocking=False):
            log.info("report.skipped", reason="a report is already running")
            return
        try:
            days = self.daemon.cfg.report_older_than_days
            self._run(list(self.daemon.roots), days * DAY, "schedule")
        except Exception as exc:
            # One structured event instead of the scheduler's traceback; the next run retries.
            log.error("report.failed", trigger="schedule", error=str(exc))
        finally:
            self._lock.release()

    def _run(self, dirs: list[str], older_than_s: float, trigger: str) -> ReportResult:
        started = time.perf_counter()
        log.info("report.started", trigger=trigger, roots=dirs)
        cfg = self.daemon.cfg
        result = produce(
            self.daemon.readers.conn(), dirs, older_than_s, cfg.reports_dir, Retention.of(cfg)
        )
        seconds = round(time.perf_counter() - started, 4)
        self.daemon.extra_status["last_report"] = {
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
        return cast(ReportResult, {**result, "seconds": seconds})

    def schedule(self, cfg: Config) -> None:
        """(Re)install the job from ``cfg``; a bad interval is logged and leaves no job.

        A cron that does not parse never gets here: loading the config refuses it.
        """
        try:
            trigger, described = schedule_for(cfg)
        except ValueError as exc:
            log.error("report.bad_schedule", cron=cfg.report_cron, error=str(exc))
            self.daemon.extra_status["report_schedule"] = {"error": str(exc)}
            if self.daemon.scheduler.get_job(JOB_ID) is not None:
                self.daemon.scheduler.remove_job(JOB_ID)
            return
        self.daemon.scheduler.add_job(self.scheduled, trigger, id=JOB_ID, replace_existing=True)
        self.daemon.extra_status["report_schedule"] = described


def start(daemon: Daemon) -> Reporter:
    """The reporter, its job scheduled from the config and rescheduled on SIGHUP."""
    reporter = Reporter(daemon)
    reporter.schedule(daemon.cfg)
    daemon.on_reload.append(reporter.schedule)
    daemon.on_clock_back.append(lambda: reporter.schedule(daemon.cfg))
    return reporter
