"""Compaction reports: each finding on crafted folders, the schedule, the socket method and CLI.

Findings are checked in-process on a real index (IndexStore + Syncer) with a
fixed "now"; the schedule, ``report`` and ``status`` on a real daemon
subprocess; the development corpus end to end, read-only.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from conftest import CORPUS
from daemon_fixtures import DaemonProc, wait_until, write_memory

from memoryd import cli
from memoryd.errors import InvalidParams
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.replies import SelectResult
from memoryd.report import Retention, build_report, write_report
from memoryd.report.document import DirectoryReport, Report
from memoryd.report.render import NOTICE, render_markdown
from memoryd.select import telemetry
from memoryd.select.telemetry import Selection

NOW = dt.datetime(2025, 6, 1, 12, 0, tzinfo=dt.UTC).timestamp()
DAY = 86400.0
TOKEN = "ghp_" + "Q" * 36


def session(folder: Path, stamp: str, project: str, status: str, checkpoint: str = "CP-S1") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stamp}-{project}.md"
    path.write_text(
        f"---\nschema_version: '1.1'\nproject-name: {project}\nsession: 1\nmode: express\n"
        f"status: {status}\nlast-checkpoint: {checkpoint}\n---\n\n## Session summary\nWork.\n",
        encoding="utf-8",
    )
    return path


@pytest.fixture
def report_of(tmp_path: Path) -> Iterator[Callable[..., Report]]:
    """Index ``dirs`` into a fresh store and build a report as of :data:`NOW`."""
    store = IndexStore(tmp_path / "index.db")

    def run(*dirs: Path, days: float = 30, now: float = NOW) -> Report:
        for d in dirs:
            Syncer(store).sync_tree(str(d))
        return build_report(store.conn, [str(d) for d in dirs], days * DAY, now)

    yield run
    store.close()


def section(report: Report, directory: Path) -> DirectoryReport:
    return next(d for d in report["directories"] if d["path"] == str(directory))


def test_old_sessions_are_grouped_per_project_with_condense_candidates(
    tmp_path: Path, report_of: Callable[..., Report]
) -> None:
    s = tmp_path / "sessions"
    session(s, "2025-01-10-09-00", "alpha", "in-progress")
    session(s, "2025-01-20-09-00", "alpha", "completed")
    session(s, "2025-02-01-09-00", "alpha", "completed")
    session(s, "2025-05-30-09-00", "alpha", "in-progress")  # recent: not old
    session(s, "2025-03-01-09-00", "beta", "paused")
    report = report_of(s)
    old = {g["project"]: g for g in section(report, s)["old_sessions"]}
    alpha = old["alpha"]
    assert alpha["count"] == 3 and alpha["first"] == "2025-01-10T09:00:00Z"
    assert alpha["last"] == "2025-02-01T09:00:00Z"
    assert alpha["files"] == [
        "2025-01-10-09-00-alpha.md",
        "2025-01-20-09-00-alpha.md",
        "2025-02-01-09-00-alpha.md",
    ]
    assert alpha["bytes"] == sum((s / f).stat().st_size for f in alpha["files"])
    assert alpha["superseded"] == [
        {"file": "2025-01-10-09-00-alpha.md", "superseded_by": "2025-02-01-09-00-alpha.md"},
        {"file": "2025-01-20-09-00-alpha.md", "superseded_by": "2025-02-01-09-00-alpha.md"},
    ]
    assert old["beta"]["count"] == 1 and old["beta"]["superseded"] == []
    assert report["summary"]["old_sessions"] == 4
    assert report["summary"]["condense_candidates"] == 2
    assert report_of(s, days=365)["summary"]["old_sessions"] == 0


def test_stale_work_is_a_projects_newest_open_session_left_untouched(
    tmp_path: Path, report_of: Callable[..., Report]
) -> None:
    s = tmp_path / "sessions"
    session(s, "2025-03-01-09-00", "beta", "paused", checkpoint="CP-S2")
    session(s, "2025-01-01-09-00", "gamma", "in-progress")  # followed by a later session
    session(s, "2025-02-01-09-00", "gamma", "completed")
    session(s, "2025-05-25-09-00", "delta", "in-progress")  # open but recent
    stale = section(report_of(s), s)["stale_work"]
    assert stale == [
        {
            "project": "beta",
            "file": "2025-03-01-09-00-beta.md",
            "status": "paused",
            "last_checkpoint": "CP-S2",
            "last_touched": "2025-03-01T09:00:00Z",
            "age_days": 92.1,
        }
    ]


def test_every_broken_file_is_listed_with_its_reason(
    tmp_path: Path, report_of: Callable[..., Report]
) -> None:
    m = tmp_path / "mem"
    write_memory(m / "feedback_ok.md", "a good memory")
    (m / "no_frontmatter.md").write_text("# just a heading\n")
    (m / "no_description.md").write_text("---\nname: x\ntype: feedback\n---\nbody\n")
    (m / "binary.md").write_bytes(b"---\x00\xff")
    session(m, "2025-01-01-09-00", "alpha", "completed").write_text("---\nstatus: [\n")
    broken = {b["file"]: b["reason"] for b in section(report_of(m), m)["broken_files"]}
    assert set(broken) == {
        "no_frontmatter.md",
        "no_description.md",
        "binary.md",
        "2025-01-01-09-00-alpha.md",
    }
    assert "no frontmatter" in broken["no_frontmatter.md"]
    assert "'description'" in broken["no_description.md"]
    assert "NUL byte" in broken["binary.md"]


def test_memory_index_health(tmp_path: Path, report_of: Callable[..., Report]) -> None:
    m = tmp_path / "mem"
    for name in ("feedback_a.md", "feedback_b.md", "feedback_unlisted.md"):
        write_memory(m / name, f"memory {name}")
    filler = "".join(
        f"- [Note {i}](https://example.com/{i}) — an external page\n" for i in range(200)
    )
    (m / "MEMORY.md").write_text(
        "- [A](feedback_a.md) — when to do A\n"
        "- [B](feedback_b.md)\n"
        "- [Gone](project_gone.md) — a file that was deleted\n" + filler
    )
    bare = tmp_path / "bare"
    write_memory(bare / "feedback_x.md", "a memory without an index")
    only_sessions = tmp_path / "sessions"
    session(only_sessions, "2025-05-01-09-00", "alpha", "completed")
    report = report_of(m, bare, only_sessions)
    health = section(report, m)["memory_index"]
    assert health is not None
    assert health["oversize"] and health["lines"] == 203
    assert health["dead_links"] == [{"line": 3, "target": "project_gone.md"}]
    assert health["unlisted"] == ["feedback_unlisted.md"]
    assert health["no_hook"] == [{"line": 2, "target": "feedback_b.md"}]
    assert section(report, bare)["memory_index"] == {
        "missing": True,
        "path": str(bare / "MEMORY.md"),
    }
    assert section(report, only_sessions)["memory_index"] is None
    assert report["summary"]["memory_index_issues"] == 4 + 1


def test_memories_over_the_hooks_cap_are_flagged_in_list_and_report(
    tmp_path: Path,
    report_of: Callable[..., Report],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    m = tmp_path / "mem"
    write_memory(m / "reference_big.md", "a dump of the API", body="x" * 5000 + "\n")
    write_memory(m / "reference_long.md", "many short lines", body="- a\n" * 250)
    write_memory(m / "feedback_small.md", "a normal memory")
    report = report_of(m)
    found = {o["file"]: o for o in section(report, m)["oversized"]}
    assert sorted(found) == ["reference_big.md", "reference_long.md"]
    assert found["reference_big.md"]["bytes"] > 5000 and found["reference_long.md"]["lines"] > 200
    assert report["summary"]["oversized"] == 2
    text = render_markdown(report)
    assert "| memories over the hook's 4 KB / 200 lines cap | 2 |" in text
    assert "### Oversized memories (the hook shows only the first 4 KB / 200 lines" in text
    assert "- `reference_long.md`: " in text and "feedback_small.md" not in text

    monkeypatch.setenv("MEMORYD_SOCKET", str(tmp_path / "none.sock"))
    assert cli.main(["list", str(m), "--db", str(tmp_path / "list.db"), "--json"]) == 0
    listed = {f["filename"]: f for f in json.loads(capsys.readouterr().out)["files"]}
    assert listed["reference_big.md"]["oversized"]["bytes"] > 5000
    assert "oversized" not in listed["feedback_small.md"]
    assert cli.main(["list", str(m), "--db", str(tmp_path / "list.db")]) == 0
    lines = capsys.readouterr().out.splitlines()
    big = next(line for line in lines if "reference_big.md" in line)
    assert big.endswith("lines; the hook shows only its first 4 KB / 200 lines: condense it]")
    assert "oversized" not in next(line for line in lines if "feedback_small.md" in line)


def test_duplicates_identical_and_near_identical(
    tmp_path: Path, report_of: Callable[..., Report]
) -> None:
    m = tmp_path / "mem"
    body = "Run the migration in a separate deploy step and watch the lock time closely.\n"
    write_memory(m / "feedback_one.md", "Deploy migrations separately", body="First.")
    write_memory(m / "feedback_two.md", "deploy   MIGRATIONS separately", body="Second.")
    write_memory(m / "project_x.md", "Release notes for x", "project", body=body)
    write_memory(m / "project_y.md", "What shipped in y", "project", body=body)
    write_memory(
        m / "feedback_testing_db.md",
        "Integration tests use a real Postgres database, never mocks of the ORM",
    )
    write_memory(
        m / "feedback_no_orm_mocks.md",
        "Don't mock the ORM in integration tests: use the real Postgres test database",
    )
    write_memory(m / "reference_unrelated.md", "Where the Grafana dashboards live", "reference")
    write_memory(m / "user_role.md", "The user is a backend engineer", "user")
    dups = section(report_of(m), m)["duplicates"]
    found = {(g["match"], tuple(sorted(g["files"]))) for g in dups}
    assert ("identical description", ("feedback_one.md", "feedback_two.md")) in found
    assert ("identical body", ("project_x.md", "project_y.md")) in found
    assert (
        "near-identical description",
        ("feedback_no_orm_mocks.md", "feedback_testing_db.md"),
    ) in found
    assert all("reference_unrelated.md" not in g["files"] for g in dups)


def test_secrets_are_named_by_line_and_kind_never_by_value(
    tmp_path: Path, report_of: Callable[..., Report]
) -> None:
    m = tmp_path / "mem"
    write_memory(m / "reference_bot.md", "The CI bot", "reference", body=f"intro\ntoken: {TOKEN}\n")
    (m / "MEMORY.md").write_text(f"- [Bot](reference_bot.md) — the bot\n- [Oops]({TOKEN}.md) — x\n")
    report = report_of(m)
    d = section(report, m)
    assert d["secrets"] == [
        {"file": "MEMORY.md", "lines": [{"line": 2, "kind": "GitHub token"}]},
        {"file": "reference_bot.md", "lines": [{"line": 7, "kind": "GitHub token"}]},
    ]
    # The index holds MEMORY.md redacted, so the token never reaches the link check.
    health = d["memory_index"]
    assert health is not None
    assert all(TOKEN not in link["target"] for link in health["dead_links"])
    md, js = write_report(report, tmp_path / "reports")
    for text in (md.read_text(), js.read_text()):
        assert TOKEN not in text and "ghp_" not in text
    assert "line 7 (GitHub token)" in md.read_text()


def test_usage_comes_from_selector_telemetry(tmp_path: Path) -> None:
    m, other = tmp_path / "mem", tmp_path / "other"
    for name in ("feedback_a.md", "feedback_b.md", "feedback_c.md"):
        write_memory(m / name, f"memory {name}")
    write_memory(other / "feedback_z.md", "never asked about")
    # Broken files are broken, not "never selected": select could never return them.
    (m / "feedback_broken.md").write_text("no frontmatter\n")
    (m / "project_bad_yaml.md").write_text("---\nname: [unclosed\n---\nbody\n")
    store = IndexStore(tmp_path / "index.db")
    try:
        for d in (m, other):
            Syncer(store).sync_tree(str(d))
        with store.transaction() as conn:
            for picked in (["feedback_a.md"], ["feedback_a.md", "feedback_b.md"], []):
                answer = {
                    "ranker": "local",
                    "selected": [{"filename": name, "score": 1.0} for name in picked],
                    "candidates": 3,
                    "excluded": {},
                    "dropped_unknown": [],
                    "fallback": None,
                }
                record = telemetry.make_record(
                    run_id=f"r{len(picked)}",
                    directory=str(m),
                    query="q",
                    session_id=None,
                    log_queries=False,
                    latency_ms=1.0,
                    selection=Selection(cast(SelectResult, answer)),
                )
                telemetry.insert(conn, record)
        report = build_report(store.conn, [str(m), str(other)], 7 * DAY)
        # Runs older than the window do not count.
        later = build_report(store.conn, [str(m)], 7 * DAY, time.time() + 30 * DAY)
    finally:
        store.close()
    usage = section(report, m)["usage"]
    assert usage == {
        "runs": 3,
        "most_selected": [
            {"file": "feedback_a.md", "count": 2},
            {"file": "feedback_b.md", "count": 1},
        ],
        "never_selected": ["feedback_c.md"],
    }
    assert section(report, other)["usage"] is None
    assert section(later, m)["usage"] is None


def test_report_files_are_named_by_time_with_a_latest_link_and_pruned(
    tmp_path: Path, report_of: Callable[..., Report]
) -> None:
    m = tmp_path / "mem"
    write_memory(m / "feedback_a.md", "a memory")
    reports = tmp_path / "reports"
    md, js = write_report(report_of(m), reports)
    stamp = dt.datetime.fromtimestamp(NOW).strftime("%Y-%m-%dT%H-%M-%S")
    assert (md.name, js.name) == (f"compaction-{stamp}.md", f"compaction-{stamp}.json")
    assert md.read_text().splitlines()[2] == f"> {NOTICE}"
    assert json.loads(js.read_text())["notice"] == NOTICE
    # A second report in the same second (so the same day) is a new pair, not a replacement.
    md2, js2 = write_report(report_of(m), reports)
    assert md2.name == f"compaction-{stamp}-1.md" and md.exists() and js.exists()
    assert os.readlink(reports / "latest.md") == md2.name
    assert os.readlink(reports / "latest.json") == js2.name
    # Pruning: by count (newest first), then by age; never the pair just written.
    os.utime(md, (NOW - 200 * DAY, NOW - 200 * DAY))
    os.utime(js, (NOW - 200 * DAY, NOW - 200 * DAY))
    write_report(report_of(m), reports, Retention(keep=30, max_age_days=90))
    assert not md.exists() and not js.exists() and md2.exists()
    (reports / "notes.md").write_text("mine")  # not a report: never touched
    md4, js4 = write_report(report_of(m), reports, Retention(keep=1, max_age_days=90))
    names = sorted(p.name for p in reports.iterdir())
    assert names == sorted(["latest.json", "latest.md", "notes.md", md4.name, js4.name])


def test_report_socket_method_and_status(make_daemon: Callable[..., DaemonProc]) -> None:
    d = make_daemon()
    root = d.roots[0]
    write_memory(root / "feedback_a.md", "a memory")
    (root / "broken.md").write_text("no frontmatter\n")
    d.call("reindex")
    with d.client() as c:
        result = c.call("report", {"dir": str(root), "older_than": "1d"})
        assert "report" in c.status()["capabilities"]
        with pytest.raises(InvalidParams, match="'older_than'"):
            c.call("report", {"dir": str(root), "older_than": "soon"})
        with pytest.raises(InvalidParams):
            c.call("report", {"bogus": 1})
        status = c.status()
    assert result["summary"]["broken_files"] == 1 and result["summary"]["files"] == 2
    assert Path(result["path"]).parent == d.state_dir / "reports"
    assert json.loads(Path(result["json"]).read_text())["older_than_days"] == 1
    last = status["last_report"]
    assert (last["path"], last["json"], last["trigger"]) == (
        result["path"],
        result["json"],
        "request",
    )
    assert status["report_schedule"] == {"cron": "0 3 * * *"}


def _events(log: str, prefix: str) -> list[dict[str, Any]]:
    out = []
    for line in log.splitlines():
        if line.startswith("{") and f'"{prefix}' in line:
            out.append(json.loads(line))
    return out


def test_schedule_fires_and_runs_never_overlap(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    root = tmp_path / "big"
    for i in range(300):
        write_memory(root / f"feedback_{i}.md", f"lesson {i} about deploys and retries {i % 7}")
    d = make_daemon(roots=[root], start=False)
    d.env["MEMORYD_REPORT_INTERVAL"] = "0.05"
    d.start()
    wait_until(
        lambda: d.call("status").get("last_report", {}).get("trigger") == "schedule",
        timeout=15,
        what="a scheduled report",
    )

    def ask() -> None:
        with d.client(timeout=30) as c:
            for _ in range(3):
                c.call("report")

    threads = [threading.Thread(target=ask) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    status = d.call("status")
    d.stop()
    events = [e["event"] for e in _events(d.log(), "report.")]
    runs = [e for e in events if e in ("report.started", "report.finished")]
    assert runs[::2] == ["report.started"] * (len(runs) // 2 + len(runs) % 2)
    assert runs[1::2] == ["report.finished"] * (len(runs) // 2)
    assert events.count("report.finished") >= 9 + 1
    # Scheduled runs that came due while a report was running were dropped, not queued.
    assert events.count("report.skipped") + d.log().count("maximum number of running") >= 1
    assert status["report_schedule"] == {"interval_s": 0.05}
    assert Path(status["last_report"]["path"]).exists()


def test_cli_report_in_process_and_through_the_daemon(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    m = tmp_path / "mem"
    write_memory(m / "feedback_a.md", "a memory")
    session(m, "2024-01-01-09-00", "alpha", "paused")
    env = {
        "MEMORYD_SOCKET": str(tmp_path / "none.sock"),
        "MEMORYD_DB": str(tmp_path / "i.db"),
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }
    cli = [sys.executable, "-m", "memoryd", "report", "--dir", str(m), "--older-than", "30d"]
    out = subprocess.run([*cli, "--json"], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["summary"]["stale_work"] == 1
    assert Path(result["path"]).parent == tmp_path / "state" / "memoryd" / "reports"
    text = subprocess.run(cli, env=env, capture_output=True, text=True).stdout
    assert text.startswith(NOTICE) and "stale in-progress/paused work" in text
    bad = subprocess.run([*cli[:4], "--older-than", "soon"], env=env, capture_output=True)
    assert bad.returncode == 1 and b"'older_than'" in bad.stderr

    d = make_daemon(roots=[m])
    via = subprocess.run(
        [*cli, "--json", "--require-daemon", "--socket", str(d.socket)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert via.returncode == 0, via.stderr
    assert Path(json.loads(via.stdout)["path"]).parent == d.state_dir / "reports"


def _listed(path: Path, base: Path) -> set[str]:
    lines = path.read_text().splitlines()
    return {str(base / line.split("\t")[0]) for line in lines if line and not line.startswith("#")}


def _fingerprint(root: Path) -> dict[str, tuple[int, str]]:
    return {
        str(p): (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_corpus_report_lists_exactly_its_broken_and_secret_files(
    make_daemon: Callable[..., DaemonProc],
) -> None:
    before = _fingerprint(CORPUS)
    d = make_daemon(roots=[CORPUS / "projects", CORPUS / "sessions"])
    result = d.call("report")
    report = json.loads(Path(result["json"]).read_text())
    markdown = Path(result["path"]).read_text()
    d.stop()
    broken = {
        os.path.join(s["path"], b["file"]) for s in report["directories"] for b in s["broken_files"]
    }
    secrets = {
        os.path.join(s["path"], x["file"]) for s in report["directories"] for x in s["secrets"]
    }
    assert broken == _listed(CORPUS / "broken_files.txt", CORPUS) | _listed(
        CORPUS / "sessions" / "broken_files.txt", CORPUS / "sessions"
    )
    assert secrets == _listed(CORPUS / "secrets_files.txt", CORPUS)
    for text in (markdown, Path(result["json"]).read_text()):
        for leaked in ("ghp_", "AKIA", "FAKEsecret", "NotARealPassw0rd"):
            assert leaked not in text
    assert not any(leaked in d.log() for leaked in ("ghp_", "AKIA", "NotARealPassw0rd"))
    ops = next(s for s in report["directories"] if s["path"].endswith("ops-dashboard"))
    assert ops["memory_index"]["unlisted"] == ["reference_grafana_rum.md"]
    assert [x["target"] for x in ops["memory_index"]["dead_links"]] == [
        "project_storybook_upgrade.md"
    ]
    assert _fingerprint(CORPUS) == before
