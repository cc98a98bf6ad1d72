"""System trees and pseudo file systems are refused as roots and save targets; walks stay off
the main thread.

``watch /proc``, ``watch /usr/share`` and ``roots: [/]`` were accepted (the
daemon then walked the whole machine on its main thread, deaf to SIGHUP), and
``save`` with ``dir: /usr`` wrote a session file there.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from daemon_fixtures import DaemonProc, composed, write_memory

from memoryd.config import Config
from memoryd.daemon import maintenance
from memoryd.daemon.compose import Parts
from memoryd.errors import RequestError
from memoryd.indexer import scanner, sync
from memoryd.system_trees import filesystem_of, refusal


def test_what_is_refused_and_why(tmp_path: Path) -> None:
    home = str(tmp_path / "home")
    assert "too broad" in (refusal("/", home) or "")
    assert "too broad" in (refusal(home, home) or "")
    assert "too broad" in (refusal("/tmp", home) or "")
    assert "system tree /usr" in (refusal("/usr/share/doc", home) or "")
    assert "system tree /proc" in (refusal("/proc/self", home) or "")
    assert refusal(str(tmp_path / "memory"), home) is None  # under /tmp: fine
    assert refusal(f"{home}/.claude/projects/x/memory", home) is None


def test_pseudo_file_systems_are_found_wherever_they_are_mounted(tmp_path: Path) -> None:
    mounts = tmp_path / "mounts"
    mounts.write_text(
        "/dev/sda1 / ext4 rw 0 0\n"
        "proc /srv/odd\\040place/proc proc rw 0 0\n"
        "tmpfs /srv/odd\\040place tmpfs rw 0 0\n"
    )
    assert filesystem_of("/srv/odd place/proc/1/environ", str(mounts)) == "proc"
    assert filesystem_of("/srv/odd place/notes", str(mounts)) == "tmpfs"
    assert filesystem_of("/home/me", str(mounts)) == "ext4"
    assert filesystem_of("/proc/self") == "proc"  # this machine's own table


def test_watch_and_save_refuse_system_trees(daemon: DaemonProc) -> None:
    for target in ("/proc", "/usr/share", "/sys/kernel", "/"):
        for method, params in (
            ("watch", {"dir": target}),
            ("save", {"dir": target, "project": "p", "session_summary": "x"}),
            ("select", {"dir": target, "query": "anything"}),
        ):
            with pytest.raises(RequestError) as err:
                daemon.call(method, params)
            assert err.value.code == "invalid_params", (target, method, err.value.message)
            assert "refusing" in err.value.message
    assert [r["path"] for r in daemon.call("status")["roots"]] == [str(daemon.roots[0])]


def test_a_configured_root_of_slash_is_refused_not_walked(
    make_daemon: Callable[..., DaemonProc],
) -> None:
    d = make_daemon(start=False, extra_args=["--default-roots"])  # the config's roots too
    config = d.home / "config" / "memoryd" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("roots: [/, /proc]\n")
    d.start()
    write_memory(d.roots[0] / "feedback_x.md", "a real memory")
    roots = [r["path"] for r in d.call("status")["roots"]]
    assert roots == [str(d.roots[0])]
    assert d.log().count("daemon.root_refused") == 2


@pytest.fixture
def bare_daemon(tmp_path: Path) -> Iterator[Parts]:
    """A daemon's parts with the server never started: their methods, called from this thread."""
    cfg = Config(socket=tmp_path / "s.sock", state_dir=tmp_path, db=tmp_path / "index.db")
    with composed(cfg) as parts:
        yield parts


def test_root_walks_run_on_the_writer_thread_not_the_callers(
    bare_daemon: Parts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The main thread handles signals: a walk there made a SIGHUP wait for the whole tree."""
    walked_on: list[str] = []
    real_walk = scanner.walk_dirs

    def walk(root: str, **options: Any) -> Any:
        walked_on.append(threading.current_thread().name)
        return real_walk(root, **options)

    monkeypatch.setattr(sync, "walk_dirs", walk)
    monkeypatch.setattr(maintenance, "walk_dirs", walk)
    root = tmp_path / "memory"
    write_memory(root / "feedback_a.md", "a memory")
    bare_daemon.roots.add(str(root), "configured", index=True, wait=False)  # as the reload does
    bare_daemon.maintenance.reconcile("startup")
    bare_daemon.writer.call(lambda store: None)
    assert walked_on and set(walked_on) == {"index-writer"}
    assert threading.current_thread().name not in walked_on
    assert os.path.isdir(root)
