"""Folders memoryd never watches or writes into: too broad (``/``, home, ``/tmp``), inside a
system tree (``/usr``, ``/proc``...), or on a pseudo file system wherever it is mounted."""

from __future__ import annotations

import os
import re

TOO_BROAD = frozenset(
    {"/", "/home", "/root", "/Users", "/var", "/opt", "/srv", "/mnt", "/media"}
    | {"/tmp", "/var/tmp"}  # noqa: S108 - named to be refused, never used
)
"""Folders refused themselves (with the home directory): they hold other people's trees."""

SYSTEM_TREES = (
    "/usr",
    "/etc",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/boot",
    "/dev",
    "/proc",
    "/sys",
    "/run",
)
"""Folders refused with everything below them."""

PSEUDO_FILESYSTEMS = frozenset(
    {
        "proc",
        "sysfs",
        "devtmpfs",
        "devpts",
        "cgroup",
        "cgroup2",
        "debugfs",
        "tracefs",
        "securityfs",
        "pstore",
        "bpf",
        "configfs",
        "fusectl",
        "mqueue",
        "hugetlbfs",
        "autofs",
        "efivarfs",
        "binfmt_misc",
        "selinuxfs",
        "nsfs",
        "rpc_pipefs",
    }
)

MOUNTS = "/proc/self/mounts"
_OCTAL = re.compile(r"\\([0-7]{3})")


def refusal(path: str, home: str | None = None) -> str | None:
    """Why ``path`` may be neither a memory root nor a save target, or None when it may."""
    home = os.path.realpath(os.path.expanduser("~")) if home is None else home
    if path in TOO_BROAD or path == home:
        return f"{path} is too broad to be a memory folder; name the memory directory itself"
    for tree in SYSTEM_TREES:
        if path == tree or path.startswith(tree + "/"):
            return f"{path} is inside the system tree {tree}, which holds no memories"
    fstype = filesystem_of(path)
    if fstype in PSEUDO_FILESYSTEMS:
        return f"{path} is on a {fstype} pseudo file system, which holds no memories"
    return None


def filesystem_of(path: str, mounts: str = MOUNTS) -> str | None:
    """The type of the file system ``path`` lives on (its longest mount point), if known."""
    try:
        with open(mounts, encoding="utf-8", errors="replace") as fh:
            table = fh.read(1024 * 1024)
    except OSError:
        return None
    best, fstype = "", None
    for line in table.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = _unescape(fields[1])
        inside = path == point or path.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, fstype = point, fields[2]
    return fstype


def _unescape(field: str) -> str:
    r"""Mount points in the table spell spaces and other bytes as octal (``\040``)."""
    return _OCTAL.sub(lambda m: chr(int(m[1], 8)), field)
