"""The hook in every failure: silent (stderr too), bounded in time and memory, exit 0.

Claude Code waits for the hook before each prompt and stores its stderr in the
transcript, so each failure here must end with nothing on stdout or stderr.
No test asserts a duration: each bounds-check is a wait that a hook without
its bound could not finish (bench/startup_bench.py measures the times).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hook_project import Project, silent_daemon

from memoryd.integrations.claude_code import started_ago


def test_daemon_down_hung_or_bad_input_say_nothing_on_stdout_or_stderr(offline: Project) -> None:
    event = offline.event("UserPromptSubmit", prompt="invoices")
    for stdin in (event, "", "not json", "[1, 2]", {**event, "hook_event_name": "Stop"}):
        proc = offline.hook(stdin, debug=False)
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", ""), stdin
    with silent_daemon() as path:
        proc = offline.hook(event, "--socket", str(path), "--timeout", "0.5", debug=False)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


def test_diagnostics_go_to_the_log_file_or_with_debug_to_stderr(
    offline: Project, tmp_path: Path
) -> None:
    event = offline.event("UserPromptSubmit", prompt="invoices")
    log = tmp_path / "hook.log"
    # A budget far past the 15 s the test waits: the hook must not spend it on a dead socket.
    proc = offline.hook(event, "--timeout", "60", debug=False, MEMORYD_HOOK_LOG=str(log))
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    (line,) = [json.loads(x) for x in log.read_text().splitlines()]
    assert line["event"] == "hook_gave_nothing" and "no memoryd daemon answers" in line["reason"]
    with silent_daemon() as path:
        loud = offline.hook(
            event, "--socket", str(path), "--timeout", "0.5", "--log-file", str(log)
        )
    assert loud.stdout == ""
    # On a loaded machine the 0.5 s can run out before the hook has asked at all.
    assert "hook_gave_nothing" in loud.stderr
    assert "did not answer" in loud.stderr or "no time left" in loud.stderr
    assert len(log.read_text().splitlines()) == 2


def test_a_missing_folder_is_only_a_debug_line(offline: Project, tmp_path: Path) -> None:
    """Most projects have no memory folder: that is not worth a line in the log."""
    shutil.rmtree(offline.memdir)
    event = offline.event("UserPromptSubmit", prompt="invoices")
    log = tmp_path / "hook.log"
    quiet = offline.hook(event, debug=False, MEMORYD_HOOK_LOG=str(log))
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    assert not log.exists()
    assert "no memory directory" in offline.hook(event).stderr


def test_stdin_that_never_closes_does_not_hang_the_hook(offline: Project) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "memoryd", "hook", "claude-code", "--timeout", "0.5"],
        stdin=subprocess.PIPE,  # held open: the hook must not wait for EOF forever
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=offline.daemon.env,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        assert proc.wait(timeout=15) == 0  # a hook waiting for EOF would never exit
        assert proc.stdout.read() == b"" and proc.stderr.read() == b""
    finally:
        proc.stdin.close()
        proc.stdout.close()
        proc.stderr.close()


@pytest.mark.parametrize("kind", ["/dev/zero", "fifo", "directory"])
def test_a_transcript_that_is_not_a_file_is_ignored(
    project: Project, tmp_path: Path, kind: str
) -> None:
    """``/dev/zero`` once cost 9.6 s and 3.7 GB; a FIFO would block the open forever."""
    path = kind
    if kind == "fifo":
        path = str(tmp_path / "t.fifo")
        os.mkfifo(path)
    elif kind == "directory":
        path = str(tmp_path)
    event = project.event("UserPromptSubmit", prompt="pytest xdist workers database")
    event["transcript_path"] = path
    assert "its own database suffix" in project.context(event, "--timeout", "60")


def test_a_huge_transcript_is_read_only_at_its_tail(project: Project, tmp_path: Path) -> None:
    transcript = tmp_path / "big.jsonl"
    with transcript.open("wb") as fh:
        fh.truncate(3 * 1024**3)  # a sparse 3 GB file of NULs
        fh.write(b"\n" + json.dumps({"message": {"content": []}}).encode() + b"\n")
    event = project.event("UserPromptSubmit", prompt="pytest xdist workers database")
    event["transcript_path"] = str(transcript)
    assert "its own database suffix" in project.context(event, "--timeout", "60")


def test_a_huge_stdin_is_refused_with_bounded_memory(offline: Project, tmp_path: Path) -> None:
    """300 MB on stdin once took 919 MB of RSS; the hook stops reading at its cap."""
    # A child that runs the hook and reports the hook's peak RSS (KiB).
    probe = (
        "import resource, subprocess, sys\n"
        "subprocess.run(sys.argv[1:], stdin=0)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    hook = [sys.executable, "-m", "memoryd", "hook", "claude-code", "--timeout", "60"]
    out, err = tmp_path / "out", tmp_path / "err"
    with out.open("wb") as fo, err.open("wb") as fe:
        proc = subprocess.Popen(
            [sys.executable, "-c", probe, *hook],
            stdin=subprocess.PIPE,
            stdout=fo,
            stderr=fe,
            env=offline.daemon.env,
        )
        assert proc.stdin is not None
        chunk = b'{"hook_event_name": "UserPromptSubmit", "prompt": "' + b"x" * (1024 * 1024)
        with contextlib.suppress(OSError):  # the hook stops reading: the pipe breaks
            for _ in range(300):
                proc.stdin.write(chunk)
        with contextlib.suppress(OSError):
            proc.stdin.close()
        assert proc.wait(timeout=120) == 0, err.read_text()
    peak = int(out.read_text().split()[-1])
    assert peak < 100 * 1024, f"peak RSS {peak} KiB"
    assert err.read_text() == ""


def test_the_budget_counts_from_the_process_start() -> None:
    """The interpreter's own start-up is part of what Claude Code waits for."""
    code = (
        "import time; time.sleep(0.3)\n"
        "from memoryd.integrations.claude_code import started_ago\n"
        "print(started_ago())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert float(out.stdout) >= 0.3
    assert started_ago() > 0


def test_after_a_daemon_stalled_the_next_hooks_wait_little(
    offline: Project, tmp_path: Path
) -> None:
    """SessionStart then the first prompt: a hung daemon must not cost both their budgets."""
    log = tmp_path / "hook.log"
    with silent_daemon() as path:
        for event in (
            offline.event("SessionStart", source="startup"),
            offline.event("UserPromptSubmit", prompt="invoices"),
        ):
            proc = offline.hook(event, "--socket", str(path), "--log-file", str(log), debug=False)
            assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    reasons = [json.loads(line)["reason"] for line in log.read_text().splitlines()]
    # SessionStart waits half the 2 s budget (less when start-up took long);
    # the prompt after the stall 0.2 s.
    waits = [float(r.removeprefix(TIMEOUT).removesuffix(" s")) for r in reasons]
    assert all(r.startswith(TIMEOUT) for r in reasons), reasons
    assert len(waits) == 2 and waits[0] <= 1.0 and waits[1] <= 0.2


TIMEOUT = "DaemonTimeout: the daemon did not answer within "
