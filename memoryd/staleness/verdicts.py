"""One memory's verdict: its citations against a snapshot of its checkout.

Per cited path: gone (``missing``), moved (``renamed``), or changed by commits after the memory
was written (``changed_since``); ignored paths are not judged. ``head`` is None outside git.
"""

from __future__ import annotations

import bisect
import os
from dataclasses import dataclass, field

from memoryd.check_replies import ChangedPath, Verdict
from memoryd.indexer.citations import KIND_DIR, KIND_FILE, KIND_NAME, Citation
from memoryd.indexer.queries import iso_utc
from memoryd.staleness.git import History

GUESS_KEY = "?guessed"
"""Added to a verdict's key for a guessed checkout, so a checkout later confirmed is re-judged."""


class Tracked:
    """The files git tracks, with the lookups verdicts need, built once per listing."""

    def __init__(self, files: set[str]) -> None:
        self.files = files
        self._sorted: list[str] | None = None
        self._names: dict[str, list[str]] | None = None

    def has(self, path: str) -> bool:
        """A tracked file, or a directory with a tracked file below it."""
        if path in self.files:
            return True
        if self._sorted is None:
            self._sorted = sorted(self.files)
        prefix = path + "/"
        at = bisect.bisect_left(self._sorted, prefix)
        return at < len(self._sorted) and self._sorted[at].startswith(prefix)

    def by_name(self) -> dict[str, list[str]]:
        """Tracked paths per file name, for bare-name citations."""
        if self._names is None:
            self._names = {}
            for path in self.files:
                self._names.setdefault(path.rsplit("/", 1)[-1], []).append(path)
        return self._names


@dataclass
class Snapshot:
    """A checkout as it is now: what exists, and (for git) what happened to it."""

    checkout: str
    head: str | None
    tracked: Tracked | None = None
    history: History | None = None
    ignored: set[str] = field(default_factory=set)
    guessed: bool = False
    """The checkout was only guessed from the folder's name: every verdict says so."""

    @property
    def key(self) -> str:
        """What a cached verdict is valid for (with the memory's content hash)."""
        return (self.head or "filesystem") + (GUESS_KEY if self.guessed else "")

    def locate(self, c: Citation) -> Citation:
        """A bare name as the one tracked file it names (or was before a rename); several files
        of that name leave it a bare name."""
        if c.kind != KIND_NAME or self.tracked is None:
            return c
        found = self.tracked.by_name().get(c.target, [])
        if len(found) == 1:
            return Citation(found[0], KIND_FILE, c.line)
        if not found and self.history is not None:
            suffix = "/" + c.target
            moved = [old for old in self.history.renames if old.endswith(suffix) or old == c.target]
            if len(moved) == 1:
                return Citation(moved[0], KIND_FILE, c.line)
        return c

    def exists(self, c: Citation) -> bool:
        full = os.path.join(self.checkout, c.target)
        if self.tracked is None:
            if c.kind == KIND_NAME:
                return True  # without git there is no cheap way to search by name
            return os.path.isdir(full) if c.kind == KIND_DIR else os.path.lexists(full)
        if c.kind == KIND_NAME:
            return c.target in self.tracked.by_name()
        if self.tracked.has(c.target):
            return True
        # Added since the last commit but not yet committed: it exists.
        return os.path.lexists(full) and c.target not in self.ignored


def judge(citations: list[Citation], mtime: float, snap: Snapshot) -> Verdict:
    """The verdict for a memory last written at ``mtime`` that cites ``citations``."""
    missing: list[str] = []
    renamed: dict[str, str] = {}
    changed: list[ChangedPath] = []
    judged = 0
    for cited in citations:
        if cited.target in snap.ignored:
            continue
        judged += 1
        c = snap.locate(cited)
        if snap.exists(c):
            if snap.history is not None and c.kind != KIND_NAME:
                count, newest = snap.history.changes_after(c.target, mtime)
                if count:
                    changed.append(
                        {"path": cited.target, "commits": count, "newest": iso_utc(newest)}
                    )
            continue
        new = _new_place(c, mtime, snap)
        if new is not None:
            renamed[cited.target] = new
        else:
            missing.append(cited.target)
    return {
        "checkout": snap.checkout,
        "checkout_guessed": snap.guessed,
        "head": snap.head,
        "cited": judged,
        "missing": missing,
        "renamed": renamed,
        "changed_since": changed,
        "all_gone": judged > 0 and len(missing) + len(renamed) == judged,
        "stale": bool(missing or renamed or changed),
    }


def _new_place(c: Citation, mtime: float, snap: Snapshot) -> str | None:
    if snap.history is None or c.kind == KIND_NAME:
        return None
    if c.kind == KIND_DIR:
        new = snap.history.dir_renamed_to(c.target, mtime)
    else:
        new = snap.history.renamed_to(c.target, mtime)
    # Moved and then deleted is simply gone.
    return new if new is not None and snap.exists(Citation(new, c.kind)) else None
