"""``memoryd doctor``: what this installation is, what it uses, and what is wrong with it.

Each check looks at one thing a user would otherwise dig out by hand and
says what it found in one line: the versions of this client and of the
daemon that answers, the socket in use and why that one, ``XDG_RUNTIME_DIR``,
inotify limits against the folders the roots hold, the index's health, the
config file, and (:mod:`memoryd.doctor_installs`) whether the Claude Code
hook and the systemd units are installed and run this installation. A
check never changes anything; it only reads (the index is opened read-only).

Severity: ``ok``; ``warn`` (works, but may surprise: no daemon running, the
hook runs another Python); ``fail`` (will not work as it is: a config
``serve`` refuses, a damaged index, an unsafe runtime directory).
"""

from __future__ import annotations

import os
import sqlite3
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memoryd import __version__, paths
from memoryd.errors import MemorydError
from memoryd.replies import StatusReply

OK, WARN, FAIL = "ok", "warn", "fail"
INOTIFY = Path("/proc/sys/fs/inotify")
WATCH_SHARE = 0.5
"""Warn when the roots alone would take more than this share of max_user_watches."""


@dataclass(frozen=True)
class Check:
    name: str
    status: str
    detail: str

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status, "detail": self.detail}


@dataclass
class Facts:
    """What the checks share: the socket, and the daemon's status when one answers."""

    socket: Path
    socket_reason: str
    status: StatusReply | None = None
    daemon_error: str | None = None


def gather(socket: Path | None) -> Facts:
    from memoryd.ipc.client import Client  # noqa: PLC0415 - keep `import memoryd.doctor` light

    # The one place doctor resolves the socket: the client's own choice and its rule.
    choice = paths.SocketChoice(socket, "--socket") if socket else paths.socket_choice()
    facts = Facts(choice.path, f"chosen by {choice.reason}")
    try:
        with Client(facts.socket, timeout=3) as c:
            facts.status = c.status()
    except MemorydError as exc:
        facts.daemon_error = str(exc)
    return facts


def run_checks(facts: Facts) -> list[Check]:
    from memoryd.doctor_alarms import alarm_checks  # noqa: PLC0415
    from memoryd.doctor_installs import check_hook, check_units  # noqa: PLC0415

    checks: list[Callable[[Facts], Check]] = [
        check_versions,
        check_socket,
        check_runtime_dir,
        check_inotify,
        check_index,
        check_config,
        check_hook,
        check_units,
    ]
    return [check(facts) for check in checks] + alarm_checks(facts)


def check_versions(facts: Facts) -> Check:
    mine = f"memoryd {__version__} (this client: {sys.executable})"
    if facts.status is None:
        return Check("versions", WARN, f"{mine}; no daemon answers")
    theirs = facts.status.get("version")
    daemon = f"daemon {theirs} (pid {facts.status.get('pid')}, {facts.status.get('state')})"
    if theirs != __version__:
        return Check("versions", WARN, f"{mine}; {daemon}: restart it to run this version")
    return Check("versions", OK, f"{mine}; {daemon}")


def check_socket(facts: Facts) -> Check:
    where = f"{facts.socket} ({facts.socket_reason})"
    if facts.status is not None:
        how = " (passed by systemd)" if facts.status.get("activated") else ""
        return Check("socket", OK, f"{where}: a daemon answers{how}")
    try:
        mode = facts.socket.lstat().st_mode
    except FileNotFoundError:
        return Check("socket", WARN, f"{where}: nothing there; start one with `memoryd serve`")
    except OSError as exc:
        return Check("socket", FAIL, f"{where}: {exc.strerror}")
    if not stat.S_ISSOCK(mode):
        return Check("socket", FAIL, f"{where}: exists and is not a socket")
    return Check("socket", WARN, f"{where}: a socket nobody answers on ({facts.daemon_error})")


def check_runtime_dir(facts: Facts) -> Check:
    value = os.environ.get("XDG_RUNTIME_DIR", "")
    if not value:
        return Check(
            "XDG_RUNTIME_DIR",
            WARN,
            "unset (no login session, e.g. su or cron): clients and a daemon started "
            "elsewhere may pick different sockets; set MEMORYD_SOCKET for both",
        )
    try:
        st = os.stat(value)
    except OSError as exc:
        return Check("XDG_RUNTIME_DIR", FAIL, f"{value}: {exc.strerror}")
    mode = stat.S_IMODE(st.st_mode)
    if st.st_uid != os.getuid() or mode & 0o077:
        owner = "ours" if st.st_uid == os.getuid() else f"uid {st.st_uid}'s"
        return Check("XDG_RUNTIME_DIR", FAIL, f"{value} is {owner}, mode {mode:o}: not private")
    return Check("XDG_RUNTIME_DIR", OK, f"{value} (ours, mode {mode:o})")


def _roots(facts: Facts) -> list[str]:
    if facts.status is not None:
        return [r["path"] for r in facts.status.get("roots", [])]
    from memoryd import config as config_mod  # noqa: PLC0415

    try:
        return list(config_mod.load().roots) or _default_roots()
    except MemorydError:
        return _default_roots()


def _default_roots() -> list[str]:
    found = sorted(str(p) for p in (paths.claude_config_dir() / "projects").glob("*/memory"))
    return found or [str(paths.data_memory_dir())]


def _folders_under(roots: list[str], limit: int) -> int:
    """Folders the watcher would watch under ``roots`` (hidden ones skipped), up to ``limit``."""
    count = 0
    for root in roots:
        for _, subdirs, _ in os.walk(root):
            subdirs[:] = [d for d in subdirs if not d.startswith(".")]
            count += 1
            if count >= limit:
                return count
    return count


def check_inotify(facts: Facts) -> Check:
    try:
        watches = int((INOTIFY / "max_user_watches").read_text())
        instances = int((INOTIFY / "max_user_instances").read_text())
    except (OSError, ValueError):
        return Check("inotify", WARN, "no inotify limits to read: the watcher polls")
    roots = _roots(facts)
    folders = _folders_under(roots, watches + 1)
    shown = [] if facts.status is None else facts.status["roots"]
    polling = [r["path"] for r in shown if r["watcher"] != "inotify"]
    detail = (
        f"{folders:,} folder(s) under {len(roots)} root(s) need as many watches; "
        f"max_user_watches {watches:,}, max_user_instances {instances:,}"
    )
    if polling:
        return Check("inotify", WARN, f"{detail}; polling instead of inotify: {', '.join(polling)}")
    if folders > watches * WATCH_SHARE:
        raise_it = "sysctl fs.inotify.max_user_watches=" + str(max(2 * folders, watches * 2))
        return Check("inotify", WARN, f"{detail}: too close to the limit; raise it ({raise_it})")
    return Check("inotify", OK, detail)


def _db(facts: Facts) -> Path:
    if facts.status is not None and facts.status.get("db"):
        return Path(facts.status["db"])
    return paths.default_db()


def check_index(facts: Facts) -> Check:
    from memoryd.indexer.schema import MIGRATIONS  # noqa: PLC0415

    db = _db(facts)
    if not db.exists():
        return Check(
            "index", WARN, f"{db} does not exist yet (the first serve or command makes it)"
        )
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            verdict = conn.execute("PRAGMA quick_check").fetchone()[0]
            done = [r[0] for r in conn.execute("SELECT name FROM _migrations ORDER BY id")]
            files, errors = conn.execute("SELECT count(*), count(error) FROM files").fetchone()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return Check("index", FAIL, f"{db}: {exc}; `memoryd serve` moves a damaged index aside")
    if verdict != "ok":
        return Check("index", FAIL, f"{db}: integrity check says {verdict!r}")
    known = [name for name, _ in MIGRATIONS]
    if [n for n in done if n not in known]:
        return Check("index", FAIL, f"{db} was written by a newer memoryd; upgrade this one")
    schema = f"schema {len(done)}/{len(known)}" + (
        "" if len(done) == len(known) else " (migrated at the next start)"
    )
    return Check("index", OK, f"{db}: intact, {schema}, {files:,} files ({errors:,} with errors)")


def check_config(facts: Facts) -> Check:
    from memoryd import config as config_mod  # noqa: PLC0415

    path = paths.config_file()
    try:
        config_mod.load()
    except MemorydError as exc:
        return Check("config", FAIL, f"{exc} (serve refuses it; see `memoryd config check`)")
    if not path.exists():
        return Check("config", OK, f"no file at {path}: the defaults")
    return Check("config", OK, f"{path} is valid (`memoryd config show` prints what it means)")
