"""A real git repository in a temp dir, with commits at chosen times (test helper)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

DAY = 86400
T0 = 1_700_000_000
"""When the test memories were "written"; commits are dated around it."""


class Repo:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str, when: float = T0 - DAY) -> str:
        stamp = f"@{int(when)} +0000"
        env = {
            **os.environ,
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.com",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.com",
            "GIT_AUTHOR_DATE": stamp,
            "GIT_COMMITTER_DATE": stamp,
        }
        done = subprocess.run(
            ["git", "-C", str(self.path), *args], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def write(self, rel: str, text: str = "x\n") -> None:
        target = self.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

    def commit(self, message: str, when: float) -> None:
        self.git("add", "-A", when=when)
        self.git("commit", "-q", "-m", message, when=when)
