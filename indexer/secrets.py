"""Spot credentials in text, reporting where and what kind, never the value; redact them.

The patterns favour precision on well-known credential shapes over catching everything.
"""

from __future__ import annotations

import re
from typing import Any

_KEY_BEGIN = re.compile(r"-----BEGIN (?:[A-Z]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----")
_KEY_END = re.compile(r"-----END (?:[A-Z]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----")

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
    ("GitLab token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}")),
    ("npm token", re.compile(r"\bnpm_[A-Za-z0-9]{36,}")),
    ("Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    # Header and payload are base64url JSON objects ('{"' encodes as eyJ).
    (
        "JSON web token",
        re.compile(r"\beyJ[A-Za-z0-9_-]{8,}+\.eyJ[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{16,}"),
    ),
    (
        "bearer token",
        re.compile(
            r"(?i:authorization)[\"']?[ \t]*+[:=][ \t]*+[\"']?(?i:bearer)[ \t]++"
            r"(?![$<{\[*])[A-Za-z0-9._~+/-]{16,}"
        ),
    ),
    (
        "password assignment",
        # A value of 6+ characters holding a digit or a symbol: prose ("the
        # password field"), placeholders (<redacted>, ${VAR}, ****, your_password)
        # and code (password=settings.db_password, os.environ[...]) are left alone.
        re.compile(
            r"(?<![A-Za-z])(?i:passw(?:or)?d)[\"']?[ \t]*+[:=][ \t]*+[\"']?"
            r"(?![$<{\[*%(]|[A-Za-z_]\w*+\.[A-Za-z_])"
            r"(?=[^\s\"'<>(),;:`]*?[0-9!@#$%^&*+=~?])[^\s\"'<>(),;:`]{6,}"
        ),
    ),
    ("private key", _KEY_BEGIN),
    (
        "password in a connection URI",
        # Possessive runs and a start only at the beginning of a scheme-like
        # run: each character is looked at a bounded number of times.
        re.compile(
            r"(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*+://[^\s:/@]++:"
            r"(?!\*++@|<[^<>\s]*+>@|\$\{?)[^\s:/@]{3,}+@[^\s/]++"
        ),
    ),
)


# Substrings (lowercased) at least one of which every pattern needs: the patterns
# run only on text that could match.
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
    "glpat-",
    "npm_",
    "hf_",
    "eyj",
    "bearer",
    "passw",
)


MAX_SCAN_LINE = 4096
"""Longer lines are scanned in overlapping windows of this many characters."""

_OVERLAP = 512
"""How far windows overlap: longer than any credential the patterns describe."""

REDACTED = "[redacted {kind}]"


def _windows(line: str) -> list[str]:
    """``line`` itself, or overlapping slices of it when it is over :data:`MAX_SCAN_LINE`."""
    if len(line) <= MAX_SCAN_LINE:
        return [line]
    step = MAX_SCAN_LINE - _OVERLAP
    return [line[i : i + MAX_SCAN_LINE] for i in range(0, len(line) - _OVERLAP, step)]


def _may_hold_secret(text: str) -> bool:
    lowered = text.lower()
    return any(marker in lowered for marker in _MARKERS)


def find_secrets(text: str) -> list[dict[str, object]]:
    """``[{"line": n, "kind": "..."}]`` for each line that looks like it holds a credential."""
    found: list[dict[str, object]] = []
    if not _may_hold_secret(text):
        return found
    for number, line in enumerate(text.splitlines(), start=1):
        kind = next((k for w in _windows(line) for k, p in _PATTERNS if p.search(w)), None)
        if kind is not None:
            found.append({"line": number, "kind": kind})
    return found


def redact(text: str) -> str:
    """``text`` with every credential the patterns find replaced by ``[redacted <kind>]``.

    Every output path and the index itself use it, so a value found once is hidden everywhere.
    """
    if not text or not _may_hold_secret(text):
        return text
    text = _redact_key_blocks(text)
    for kind, pattern in _PATTERNS:
        text = pattern.sub(REDACTED.format(kind=kind), text)
    return text


def redact_value(value: Any) -> Any:
    """:func:`redact` applied to every string inside nested dicts and lists."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v) for v in value]
    return value


def _redact_key_blocks(text: str) -> str:
    """Replace each private key block, armour to armour (or to the end when unclosed)."""
    out, pos = [], 0
    while (begin := _KEY_BEGIN.search(text, pos)) is not None:
        end = _KEY_END.search(text, begin.end())
        out += [text[pos : begin.start()], REDACTED.format(kind="private key")]
        pos = len(text) if end is None else end.end()
    out.append(text[pos:])
    return "".join(out)
