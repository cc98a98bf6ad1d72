"""What git knows about a checkout, through ``git`` subprocesses with timeouts.

Every failure is :class:`GitUnavailable` with a one-line reason. A history is read once, then
extended by the new commits only.
"""

from __future__ import annotations

import bisect
import os
import subprocess
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

GIT_TIMEOUT_S = 20.0
MAX_COMMITS = 20_000
"""History read per checkout; older commits are not consulted (a cap for huge repos)."""

MAX_TRACKED = 500_000
"""A checkout tracking more files than this is reported as too large, not listed."""


class GitUnavailable(Exception):
    """git could not answer; the message says why, in words for a person."""


def run_git(checkout: str, *args: str, timeout: float = GIT_TIMEOUT_S, stdin: str = "") -> str:
    """``git -C checkout args...``'s stdout, or :class:`GitUnavailable`."""
    cmd = ["git", "-c", "core.quotePath=false", "-C", checkout, *args]
    try:
        done = subprocess.run(
            cmd, input=stdin, capture_output=True, text=True, timeout=timeout, check=False
        )
    except FileNotFoundError:
        raise GitUnavailable("git is not installed") from None
    except subprocess.TimeoutExpired:
        raise GitUnavailable(f"git {args[0]} took longer than {timeout:g} s") from None
    except OSError as exc:
        raise GitUnavailable(f"cannot run git: {exc.strerror or exc}") from None
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["no message"])[0]
        raise GitUnavailable(f"git {args[0]} failed: {first}")
    return done.stdout


def head_of(checkout: str) -> tuple[str, str] | None:
    """``(top of the work tree, HEAD commit)`` for a directory in a git work tree, else None
    (memories cite paths from the top)."""
    try:
        out = run_git(checkout, "rev-parse", "--show-toplevel", "HEAD", timeout=5.0)
    except GitUnavailable:
        return None
    lines = out.split("\n")
    if len(lines) < 2 or not lines[0] or not lines[1].strip():
        return None
    return os.path.realpath(lines[0]), lines[1].strip()


def tracked_files(checkout: str) -> set[str]:
    """Files in git's index (``git ls-files``): ignored build output is not among them."""
    out = run_git(checkout, "ls-files", "-z")
    names = out.split("\0")
    if len(names) > MAX_TRACKED:
        raise GitUnavailable(f"checkout tracks over {MAX_TRACKED:,} files; not checked")
    return {n for n in names if n}


def ignored(checkout: str, paths: list[str]) -> set[str]:
    """The subset of ``paths`` that .gitignore rules exclude."""
    if not paths:
        return set()
    try:
        out = run_git(checkout, "check-ignore", "--no-index", "--stdin", stdin="\n".join(paths))
    except GitUnavailable:
        return set()  # exit status 1 means "none ignored"
    return {line for line in out.splitlines() if line}


@dataclass
class History:
    """Per path: when commits touched it, and which renames moved it, oldest first."""

    head: str | None = None
    commits: int = 0
    touched: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    renames: dict[str, list[tuple[int, str]]] = field(default_factory=lambda: defaultdict(list))

    def extend(self, checkout: str, head: str) -> None:
        """Read the commits between the last head seen and ``head`` (all of them the first time)."""
        if self.head == head:
            return
        if self.head is not None and _is_ancestor(checkout, self.head, head):
            span = f"{self.head}..{head}"
        else:
            self.touched.clear()
            self.renames.clear()
            self.commits = 0
            span = head
        out = run_git(
            checkout,
            "log",
            "--reverse",
            f"--max-count={MAX_COMMITS}",
            "--no-merges",
            "-M",
            "--name-status",
            "--format=%x1e%ct",
            span,
            timeout=GIT_TIMEOUT_S * 3,
        )
        fresh: set[str] = set()
        for when, names in _commits(out, self.renames):
            self.commits += 1
            for name in names:  # a set: a commit counts once per path, however many files
                self.touched[name].append(when)
            fresh |= names
        # Commit times are not always in topological order; bisect needs them sorted.
        for name in fresh:
            self.touched[name].sort()
        self.head = head

    def changes_after(self, path: str, since: float) -> tuple[int, int]:
        """``(commits, newest commit time)`` touching ``path`` (or below it) after ``since``."""
        times = self.touched.get(path)
        if not times:
            return 0, 0
        after = len(times) - bisect.bisect_right(times, since)
        return after, times[-1] if after else 0

    def renamed_to(self, path: str, since: float) -> str | None:
        """Where ``path`` went, following later renames; those after ``since`` win."""
        moves = self.renames.get(path)
        if not moves:
            return None
        later = [m for m in moves if m[0] > since]
        when, new = (later or moves)[-1]
        seen = {path}
        while new in self.renames and new not in seen:
            seen.add(new)
            after = [m for m in self.renames[new] if m[0] >= when]
            if not after:
                break
            when, new = after[-1]
        return new

    def dir_renamed_to(self, directory: str, since: float) -> str | None:
        """A directory's new place, when every rename out of it lands under one new directory."""
        prefix = directory + "/"
        targets = set()
        for old, moves in self.renames.items():
            if old.startswith(prefix):
                later = [m for m in moves if m[0] > since] or moves
                new = later[-1][1]
                tail = old[len(prefix) :]
                if not new.endswith("/" + tail):
                    return None
                targets.add(new[: -len(tail) - 1])
        return targets.pop() if len(targets) == 1 else None


def _commits(
    log_text: str, renames: dict[str, list[tuple[int, str]]]
) -> Iterator[tuple[int, set[str]]]:
    """``(commit time, paths and parent directories it touched)`` per commit of the log text;
    renames are recorded on the way."""
    when, names = 0, set[str]()
    for line in log_text.split("\n"):
        if line.startswith("\x1e"):
            if when:
                yield when, names
            when, names = int(line[1:] or 0), set()
            continue
        parts = line.split("\t")
        if len(parts) < 2:
            continue
        path = parts[-1]
        names.update(_with_parents(path))
        if parts[0].startswith("R") and len(parts) == 3:
            renames[parts[1]].append((when, path))
            # Moving a file out of a directory changes that directory too.
            names.update(_with_parents(parts[1])[:-1])
    if when:
        yield when, names


def _with_parents(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]


def _is_ancestor(checkout: str, old: str, new: str) -> bool:
    try:
        run_git(checkout, "merge-base", "--is-ancestor", old, new, timeout=5.0)
    except GitUnavailable:
        return False
    return True
