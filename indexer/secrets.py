"""Spot credentials in memory files, reporting where and what kind, never the value.

Agents sometimes paste a token into a memory. memoryd flags such files in the
index so ``select`` never injects them into a prompt without an explicit
opt-in, and compaction reports name them by path and line only. The patterns
favour precision on well-known credential shapes over catching everything.
"""

from __future__ import annotations

import re

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})")),
    ("AWS access key id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    (
        "AWS secret access key",
        re.compile(
            r"(?i:aws_?secret_?access_?key)\s*[:=]\s*['\"]?[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])"
        ),
    ),
    ("Anthropic API key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}")),
    ("OpenAI-style API key", re.compile(r"\bsk-(?:proj-)?[A-Za-z0-9]{32,}")),
    ("Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("Stripe secret key", re.compile(r"\b[rs]k_live_[0-9A-Za-z]{16,}")),
    ("private key", re.compile(r"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----")),
    (
        "password in a connection URI",
        re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s:/@]+:(?!\*+@|<[^>]*>@|\$\{?)[^\s:/@]{3,}@[^\s/]+"),
    ),
)


# Substrings at least one of which every pattern needs (lowercased). Nearly
# every file is clean, and these substring tests cost a fraction of one regex
# pass, so the patterns only run on files that could match.
_MARKERS = (
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "akia",
    "asia",
    "secret_access",
    "secretaccess",
    "sk-",
    "xox",
    "aiza",
    "k_live_",
    "private key",
    "://",
)


def find_secrets(text: str) -> list[dict[str, object]]:
    """``[{"line": n, "kind": "..."}]`` for each line that looks like it holds a credential."""
    found: list[dict[str, object]] = []
    lowered = text.lower()
    if not any(marker in lowered for marker in _MARKERS):
        return found
    for number, line in enumerate(text.splitlines(), start=1):
        for kind, pattern in _PATTERNS:
            if pattern.search(line):
                found.append({"line": number, "kind": kind})
                break
    return found
