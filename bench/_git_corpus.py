"""A generated git checkout with a long history, built with ``git fast-import``.

Committing 5,000 times through ``git commit`` would take many minutes on a
busy machine; one fast-import stream takes seconds. The history is
deterministic for a seed: an initial commit with every file, then commits
that each modify one to three files, with a rename every
:data:`RENAME_EVERY` commits and a deletion every :data:`DELETE_EVERY`.
:class:`GeneratedCheckout` records what happened, so a benchmark can cite
paths and know the right verdict for each.
"""

from __future__ import annotations

import io
import random
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

RENAME_EVERY = 50
DELETE_EVERY = 70
COMMIT_STEP_S = 600
START = 1_600_000_000


@dataclass
class GeneratedCheckout:
    path: Path
    initial: list[str]
    start: int
    end: int
    renamed: dict[str, str] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)


def git(path: Path, *args: str, when: int | None = None, stdin: bytes | None = None) -> str:
    """Run git in ``path`` as a fixed author (at ``when``, if given)."""
    env = {
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.com",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.com",
        "PATH": "/usr/bin:/bin:/usr/local/bin",
        "HOME": str(path),
    }
    if when is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"@{when} +0000"
    cmd = ["git", "-C", str(path), *args]
    done = subprocess.run(cmd, input=stdin, env=env, capture_output=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"git {args[0]} failed: {done.stderr.decode(errors='replace')}")
    return done.stdout.decode()


def file_paths(count: int) -> list[str]:
    """``count`` source-like paths spread over two directory levels."""
    per_dir = 20
    return [
        f"src/pkg{i // (per_dir * 50):02d}/mod{(i // per_dir) % 50:02d}/file_{i:05d}.py"
        for i in range(count)
    ]


def _data(out: io.BytesIO, text: str) -> None:
    raw = text.encode()
    out.write(b"data %d\n" % len(raw) + raw + b"\n")


def _commit_header(out: io.BytesIO, when: int, message: str) -> None:
    # Without a ``from`` line, fast-import continues the branch it is building.
    out.write(b"commit refs/heads/main\n")
    out.write(b"committer bench <bench@example.com> %d +0000\n" % when)
    _data(out, message)


def generate(path: Path, files: int, commits: int, seed: int = 7) -> GeneratedCheckout:
    """Create the repository at ``path`` and check it out."""
    rng = random.Random(seed)
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    initial = file_paths(files)
    live = list(initial)
    out = io.BytesIO()
    when = START
    _commit_header(out, when, "initial import")
    for name in initial:
        out.write(f"M 100644 inline {name}\n".encode())
        _data(out, f"# {name}\nVALUE = 0\n")
    result = GeneratedCheckout(path, initial, START, START)
    original = {name: name for name in initial}  # current path -> path in the initial commit
    for n in range(1, commits):
        when += COMMIT_STEP_S
        _commit_header(out, when, f"change {n}")
        if n % RENAME_EVERY == 0:
            old = live.pop(rng.randrange(len(live)))
            new = old.replace(".py", f"_r{n}.py")
            out.write(f"R {old} {new}\n".encode())
            live.append(new)
            first = original.pop(old)
            original[new] = first
            result.renamed[first] = new
        elif n % DELETE_EVERY == 0:
            old = live.pop(rng.randrange(len(live)))
            out.write(f"D {old}\n".encode())
            first = original.pop(old)
            result.renamed.pop(first, None)
            result.deleted.add(first)
        else:
            for name in rng.sample(live, rng.randint(1, 3)):
                out.write(f"M 100644 inline {name}\n".encode())
                _data(out, f"# {name}\nVALUE = {n}\n")
    git(path, "fast-import", "--quiet", stdin=out.getvalue())
    git(path, "reset", "-q", "--hard", "main")
    result.end = when
    return result
