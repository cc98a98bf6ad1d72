"""Where reports are written: a pair of files per run named by its second, a ``latest`` link.

After each write, pairs beyond ``reports.keep`` or older than ``reports.max_age_days`` are
deleted (only memoryd's report names, never the pair just written).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memoryd.config import Config
from memoryd.report.findings import DAY
from memoryd.report.render import render_markdown
from memoryd.sessions.writes import TEMP_SUFFIX, unwritable, write_atomic

if TYPE_CHECKING:
    from memoryd.report.document import Report

_REPORT_FILE = re.compile(
    r"^(compaction-\d{4}-\d{2}-\d{2}(?:T\d{2}-\d{2}-\d{2})?(?:-\d+)?)\.(md|json)$"
)

LATEST = "latest"


@dataclass(frozen=True)
class Retention:
    """How many reports to keep, and for how long."""

    keep: int = 30
    max_age_days: float = 90.0

    @classmethod
    def of(cls, cfg: Config) -> Retention:
        return cls(cfg.report_keep, cfg.report_max_age_days)


def write_report(
    report: Report, reports_dir: Path, retention: Retention | None = None
) -> tuple[Path, Path]:
    """Write the report's ``.md`` and ``.json`` atomically, point ``latest`` at them, prune; a
    write the disk refuses is ``unwritable``."""
    try:
        reports_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        stem = f"compaction-{report['stamp']}"
        n = 1
        while (reports_dir / f"{stem}.md").exists() or (reports_dir / f"{stem}.json").exists():
            stem = f"compaction-{report['stamp']}-{n}"
            n += 1
        md_path, json_path = reports_dir / f"{stem}.md", reports_dir / f"{stem}.json"
        body = json.dumps(report, ensure_ascii=False, indent=2) + "\n"
        write_atomic(os.fspath(json_path), body, mode=0o600)
        write_atomic(os.fspath(md_path), render_markdown(report), mode=0o600)
        for path in (md_path, json_path):
            _link(reports_dir / f"{LATEST}{path.suffix}", path.name)
        prune(reports_dir, retention or Retention(), keep_stem=stem)
        return md_path, json_path
    except OSError as exc:
        raise unwritable(exc.filename or os.fspath(reports_dir), exc) from None


def _link(link: Path, target: str) -> None:
    """Replace ``link`` with a relative symlink to ``target`` in one rename (the temp named as
    :func:`write_atomic` names its own, so start-up removes a leftover)."""
    tmp = link.with_name(f".{link.name}.{os.getpid()}.{secrets.token_hex(4)}{TEMP_SUFFIX}")
    os.symlink(target, tmp)
    os.replace(tmp, link)


def prune(reports_dir: Path, retention: Retention, keep_stem: str) -> None:
    """Delete report pairs past the count or the age limit."""
    now = time.time()
    pairs: dict[str, list[Path]] = {}
    for path in reports_dir.iterdir():
        match = _REPORT_FILE.match(path.name)
        if match:
            pairs.setdefault(match.group(1), []).append(path)
    newest_first = sorted(pairs, key=lambda s: _mtime(pairs[s]), reverse=True)
    for rank, stem in enumerate(newest_first):
        if stem == keep_stem:
            continue
        too_many = rank >= retention.keep
        too_old = now - _mtime(pairs[stem]) > retention.max_age_days * DAY
        if too_many or too_old:
            for path in pairs[stem]:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()


def _mtime(paths: list[Path]) -> float:
    return max((p.stat().st_mtime for p in paths if p.exists()), default=0.0)
