"""``doctor``'s checks of what quietly stopped working: the hook, selection, watchers, the index.

The daemon works these out (``status``'s ``alarms``, see the daemon's alarms
module); each kind becomes one line here, ``warn`` with every message of
that kind, or ``ok`` with what was checked. Without a daemon, only the hook's
record can be read (it is a file the hook keeps); the other three need the
daemon's view and are left out, as they are for a daemon too old to report them.
"""

from __future__ import annotations

from memoryd.doctor import OK, WARN, Check, Facts
from memoryd.integrations._hook_state import HookFailures

KINDS = {
    "hook": ("hook reach", "no failed requests of the Claude Code hook are on record"),
    "selection": (
        "selection",
        "every folder with memories had something selected within its last 20 prompts",
    ),
    "watcher": ("watchers", "every root is watched with inotify, and no watcher died"),
    "index": ("index sync", "the roots' own files agree with the index"),
}


def alarm_checks(facts: Facts) -> list[Check]:
    status = facts.status
    if status is None or "alarms" not in status:
        hook = HookFailures().message()
        name, fine = KINDS["hook"]
        return [Check(name, WARN, hook) if hook else Check(name, OK, fine)]
    checks = []
    for kind, (name, fine) in KINDS.items():
        found = [a["message"] for a in status["alarms"] if a["kind"] == kind]
        checks.append(Check(name, WARN, "; ".join(found)) if found else Check(name, OK, fine))
    return checks
