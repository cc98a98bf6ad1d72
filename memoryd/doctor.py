"""``memoryd doctor``: what this installation is, what it uses, and what is wrong with it.

Each check reads one thing (nothing is changed) and says in one line what it found: ``ok``,
``warn`` (works, but may surprise) or ``fail`` (will not work as it is).
"""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass
from itertools import chain, islice
from pathlib import Path

from memoryd import __version__, paths
from memoryd import config as config_mod
from memoryd.claude_folders import known_folders
from memoryd.daemon.alarms import NOTHING_RUNS, hook_alarms
from memoryd.daemon.pruned_watch import kept_subdirectories
from memoryd.errors import MemorydError
from memoryd.indexer.schema import MIGRATIONS, UNRELEASED
from memoryd.integrations import install
from memoryd.integrations.systemd_units import UNITS, user_unit_dir
from memoryd.ipc.client import Client
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
    choice = paths.SocketChoice(socket, "--socket") if socket else paths.socket_choice()
    facts = Facts(choice.path, f"chosen by {choice.reason}")
    try:
        with Client(facts.socket, timeout=3) as c:
            facts.status = c.status()
    except MemorydError as exc:
        facts.daemon_error = str(exc)
    return facts


def run_checks(facts: Facts) -> list[Check]:
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
    try:
        roots = list(config_mod.load().roots)
    except MemorydError:
        roots = []
    return roots or [str(p) for p in known_folders()] or [str(paths.data_memory_dir())]


def _folders_under(roots: list[str], limit: int) -> int:
    """Folders the watcher would watch under ``roots`` (by its own rule), up to ``limit``."""
    every = (chain([root], kept_subdirectories(root)) for root in roots if os.path.isdir(root))
    return sum(1 for _ in islice(chain.from_iterable(every), limit))


def check_inotify(facts: Facts) -> Check:
    try:
        watches = int((INOTIFY / "max_user_watches").read_text())
        instances = int((INOTIFY / "max_user_instances").read_text())
    except (OSError, ValueError):
        return Check("inotify", WARN, "no inotify limits to read: the watcher polls")
    roots = _roots(facts)
    folders = _folders_under(roots, watches + 1)
    detail = (
        f"{folders:,} folder(s) under {len(roots)} root(s) need as many watches; "
        f"max_user_watches {watches:,}, max_user_instances {instances:,}"
    )
    if folders > watches * WATCH_SHARE:
        raise_it = "sysctl fs.inotify.max_user_watches=" + str(max(2 * folders, watches * 2))
        return Check("inotify", WARN, f"{detail}: too close to the limit; raise it ({raise_it})")
    return Check("inotify", OK, detail)


def check_index(facts: Facts) -> Check:
    given = facts.status.get("db") if facts.status is not None else None
    db = Path(given) if given else paths.default_db()
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
    if done[:1] == [UNRELEASED]:
        return Check("index", OK, f"{db}: from a build before 0.1.0, rebuilt at the next start")
    if [n for n in done if n not in known]:
        return Check("index", FAIL, f"{db} was written by a newer memoryd; upgrade this one")
    schema = f"schema {len(done)}/{len(known)}" + (
        "" if len(done) == len(known) else " (migrated at the next start)"
    )
    return Check("index", OK, f"{db}: intact, {schema}, {files:,} files ({errors:,} with errors)")


def check_config(facts: Facts) -> Check:
    path = paths.config_file()
    try:
        config_mod.load()
    except MemorydError as exc:
        return Check("config", FAIL, f"{exc} (serve refuses it; see `memoryd config check`)")
    if not path.exists():
        return Check("config", OK, f"no file at {path}: the defaults")
    return Check("config", OK, f"{path} is valid (`memoryd config show` prints what it means)")


def _runs_this(command: str) -> bool:
    """Whether ``command`` starts with this interpreter, from this venv's own folder."""
    try:
        first = shlex.split(command)[0]
    except (ValueError, IndexError):
        return False
    mine = sys.executable
    same_folder = os.path.dirname(os.path.abspath(first)) == os.path.dirname(os.path.abspath(mine))
    return same_folder and os.path.realpath(first) == os.path.realpath(mine)


def check_hook(facts: Facts) -> Check:
    name, settings = "claude-code hook", install.default_settings()
    todo = "`memoryd install-hook claude-code`"
    split = install.hook_in_one_config_only()
    try:
        doc = json.loads(settings.read_text(encoding="utf-8") or "{}")
    except FileNotFoundError:
        return Check(name, WARN, split or f"not installed (no {settings}); {todo}")
    except (OSError, ValueError) as exc:
        return Check(name, FAIL, f"{settings} cannot be read as JSON: {exc}")
    commands = install.hook_commands(doc)
    missing = [event for event, found in commands.items() if not found]
    others = sorted({c for found in commands.values() for c in found if not _runs_this(c)})
    if len(missing) == len(commands):
        return Check(name, WARN, split or f"not in {settings}; {todo}")
    if others:
        return Check(name, WARN, f"in {settings} but runs {others[0]}, not this one; {todo}")
    if missing:
        return Check(name, WARN, f"in {settings} without {', '.join(missing)}; {todo}")
    if split is not None:
        return Check(name, WARN, split)
    return Check(name, OK, f"in {settings} ({', '.join(commands)}), running this installation")


def check_units(facts: Facts) -> Check:
    name, target = "systemd units", user_unit_dir()
    service = target / UNITS[0]
    todo = "`memoryd install-service`"
    try:
        text = service.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Check(name, WARN, f"not installed in {target}; {todo}")
    except OSError as exc:
        return Check(name, FAIL, f"{service}: {exc.strerror}")
    starts = [line.partition("=")[2] for line in text.splitlines() if line.startswith("ExecStart=")]
    absent = [unit for unit in UNITS if not (target / unit).exists()]
    enabled = [unit for unit in UNITS if list(target.glob(f"*.wants/{unit}"))]
    state = f"enabled: {', '.join(enabled)}" if enabled else "not enabled"
    if absent:
        return Check(name, WARN, f"{', '.join(absent)} missing in {target}; {todo}")
    if not starts or not _runs_this(starts[0]):
        shown = starts[0] if starts else "no ExecStart"
        return Check(name, WARN, f"{service} runs {shown}, not this one; {todo}")
    return Check(name, OK, f"{target} ({state}), running this installation")


ALARMS = {
    "hook": ("hook reach", "no failed requests of the Claude Code hook are on record"),
    "selection": (
        "selection",
        f"every folder with memories had something selected within its last {NOTHING_RUNS} prompts",
    ),
    "watcher": ("watchers", "every root is watched with inotify, and no watcher died"),
    "index": ("index sync", "the roots' own files agree with the index"),
}


def alarm_checks(facts: Facts) -> list[Check]:
    """One line per kind of the daemon's ``alarms``: ``warn`` with its messages, else ``ok``;
    with no daemon to ask, the hook's alone."""
    status = facts.status
    if status is not None and "alarms" in status:
        found, kinds = status["alarms"], list(ALARMS)
    else:
        found, kinds = hook_alarms(), ["hook"]
    checks = []
    for kind in kinds:
        name, fine = ALARMS[kind]
        messages = [a["message"] for a in found if a["kind"] == kind]
        checks.append(Check(name, WARN, "; ".join(messages)) if messages else Check(name, OK, fine))
    return checks
