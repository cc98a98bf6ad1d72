"""Configuration, SIGHUP reload, and the polling fallback when inotify runs out."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from daemon_fixtures import DaemonProc, wait_until, write_memory


def test_config_roots_and_sighup_reload(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    write_memory(first / "user_a.md", "first root memory", mtype="user")
    write_memory(second / "user_b.md", "second root memory", mtype="user")
    config = tmp_path / "config.yaml"
    config.write_text(f"roots: [{first}]\nreconcile_interval: 120\n")
    d = make_daemon(roots=[], start=False, extra_args=["--config", str(config)])
    d.start()
    assert [r["path"] for r in d.call("status")["roots"]] == [str(first)]
    config.write_text(f"roots: [{first}, {second}]\nreconcile_interval: 120\n")
    assert d.proc is not None
    d.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: len(d.call("status")["roots"]) == 2, what="the reloaded root")
    assert d.call("list", {"dir": str(second)})["files"][0]["description"] == "second root memory"
    assert '"daemon.reloaded"' in d.log()


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("roots: [a]\ncolour: blue\n", "unknown key(s): colour"),
        ("anthropic:\n  modle: x\n", "unknown key(s): anthropic.modle"),
        ("roots: 7\n", "'roots' must be a list"),
        ("reconcile_interval: -1\n", "must be positive"),
        ("roots: [unclosed\n", "invalid YAML at line 2, column 1: expected ',' or ']'"),
        ("roots: [a]\nb: :\n", "invalid YAML at line 2, column 4"),
        ('reports:\n  cron: "not a cron"\n', "'reports.cron' is not a cron expression"),
        ("reports:\n  cron: 3\n", "'reports.cron' must be a string"),
        ('reports:\n  cron: ""\n', "'reports.cron' is not a cron expression"),
    ],
)
def test_bad_config_is_one_clear_error(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path, text: str, fragment: str
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(text)
    d = make_daemon(start=False, extra_args=["--config", str(config)])
    out = subprocess.run(d.argv(), env=d.env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 1
    # One line, whatever went wrong: PyYAML's own messages span several.
    assert out.stderr.startswith("memoryd: error: ") and out.stderr.count("\n") == 1, out.stderr
    assert fragment in out.stderr


@contextmanager
def inotify_exhausted() -> Iterator[int]:
    """Use up this user's inotify instances, as a busy desktop session can.

    Other processes of the same user (parallel test runs) free instances now
    and then; a thread takes each one back at once, so the daemon finds none.
    """
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    fds: list[int] = []
    done = threading.Event()

    def grab() -> None:
        while len(fds) < 4096:
            fd = libc.inotify_init1(os.O_CLOEXEC)
            if fd < 0:
                break
            fds.append(fd)

    def keep_grabbing() -> None:
        while not done.wait(0.002):
            grab()

    grab()
    keeper = threading.Thread(target=keep_grabbing, daemon=True)
    keeper.start()
    try:
        yield len(fds)
    finally:
        done.set()
        keeper.join()
        for fd in fds:
            os.close(fd)


@pytest.mark.serial  # exhausts the user's inotify instances: no other daemon may start
def test_inotify_limit_falls_back_to_polling(make_daemon: Callable[..., DaemonProc]) -> None:
    limit = int(Path("/proc/sys/fs/inotify/max_user_instances").read_text())
    if limit > 4096:
        pytest.skip(f"max_user_instances is {limit}; too many to exhaust in a test")
    d = make_daemon(start=False)
    root = d.roots[0]
    with inotify_exhausted():
        d.start()
    status = d.call("status")
    assert status["roots"][0]["watcher"] == "polling"
    assert '"watcher.polling_fallback"' in d.log()
    target = write_memory(root / "feedback_polled.md", "seen by the polling observer")
    wait_until(
        lambda: [f["path"] for f in d.call("list", {"dir": str(root)})["files"]] == [str(target)],
        timeout=10,
        what="a polled change",
    )
