"""Credential detection: each shape is found by line and kind; look-alikes are not."""

from __future__ import annotations

import pytest

from memoryd.indexer.secrets import find_secrets

FAKE = "FAKE" * 9  # 36 characters, clearly not a real token


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        (f"token: ghp_{FAKE}", "GitHub token"),
        (f"pat github_pat_{FAKE}{FAKE}", "GitHub token"),
        ("key id AKIAFAKEFAKEFAKEFAKE", "AWS access key id"),
        ("aws_secret_access_key = " + "Ab1/" * 10, "AWS secret access key"),
        ("AWS_SECRET_ACCESS_KEY: " + "x" * 40, "AWS secret access key"),
        ("ANTHROPIC_API_KEY=sk-ant-api03-" + "f" * 30, "Anthropic API key"),
        ("OPENAI=sk-" + "a1" * 20, "OpenAI-style API key"),
        ("SLACK_BOT=xoxb-1234-5678-abcdefgh", "Slack token"),
        ("maps AIza" + "F" * 35, "Google API key"),
        ("stripe sk_live_" + "7" * 24, "Stripe secret key"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----", "private key"),
        (
            "DATABASE_URL=postgres://app:hunter22@db.internal:5432/app",
            "password in a connection URI",
        ),
    ],
)
def test_each_credential_shape_is_found_by_line_and_kind(line: str, kind: str) -> None:
    text = f"---\ndescription: notes\n---\nsome prose\n{line}\nmore prose\n"
    assert find_secrets(text) == [{"line": 5, "kind": kind}]


@pytest.mark.parametrize(
    "line",
    [
        "run the task-runner with --fast",  # 'sk-' inside a word
        "see https://example.com/docs for the API",  # a URL without credentials
        "postgres://app:${DB_PASSWORD}@db:5432/app",  # a placeholder, not a password
        "postgres://app:****@db:5432/app",  # already redacted
        "the secret is to restart the worker first",  # the word alone
        "timezone Asia/Tokyo breaks the date-only reminders",
        "ghp_short",  # too short to be a token
    ],
)
def test_look_alikes_are_not_flagged(line: str) -> None:
    assert find_secrets(f"intro\n{line}\n") == []
