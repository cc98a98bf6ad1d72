"""The credential shapes added after an adversarial run: found, never injected, never echoed.

GitLab, npm and Hugging Face tokens, JWTs, ``Authorization: Bearer`` values,
``password=`` / ``passwd:`` assignments and PGP private key blocks are
flagged like the older kinds: a flagged memory is never selected, and the
value is in no reply (``list``, ``select``, ``load_last``) and not in the
index. Prose and placeholders that only look like them are not flagged.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from daemon_fixtures import DaemonProc

from memoryd.indexer.secrets import find_secrets, redact

SECRETS = {
    "GitLab token": "glpat-Zq8xK2mW9vT4nR7pL3sY",
    "npm token": "npm_Q7w2E9r4T6y1U8i3O5p0A2s4D6f8G1h3J5k7",
    "Hugging Face token": "hf_QwErTyUiOpAsDfGhJkLzXcVbNm1234567890",
    "JSON web token": (
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJkZXBsb3kifQ.Qm9ndXNTaWduYXR1cmVGb3JUZXN0aW5n"
    ),
    "bearer token": "Authorization: Bearer Zq8xK2mW9vT4nR7pL3sYqq",
    "password assignment": "password=Tr0ub4dor&3x",
    "private key": (
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGZqFAKEFAKEkeyMATERIAL\n"
        "-----END PGP PRIVATE KEY BLOCK-----"
    ),
}
"""One value of each new kind (fake), as it would sit in a memory."""

VALUE_PIECES = {
    "GitLab token": "Zq8xK2mW9vT4nR7pL3sY",
    "npm token": "Q7w2E9r4T6y1U8i3O5p0",
    "Hugging Face token": "QwErTyUiOpAsDfGhJkLz",
    "JSON web token": "Qm9ndXNTaWduYXR1cmVGb3JUZXN0aW5n",
    "bearer token": "Zq8xK2mW9vT4nR7pL3sYqq",
    "password assignment": "Tr0ub4dor",
    "private key": "FAKEFAKEkeyMATERIAL",
}
"""The part of each value no reply and no row may hold."""


@pytest.mark.parametrize("kind", SECRETS)
def test_each_new_shape_is_found_and_redacted(kind: str) -> None:
    text = f"deploy notes\nuse {SECRETS[kind]} for the registry\n"
    assert find_secrets(text)[0] == {"line": 2, "kind": kind}
    assert VALUE_PIECES[kind] not in redact(text)
    assert f"[redacted {kind}]" in redact(text)


def test_a_passwd_colon_assignment_is_found() -> None:
    assert find_secrets("db passwd: s3cr3tPa55")[0]["kind"] == "password assignment"
    assert find_secrets('POSTGRES_PASSWORD: "hunter2x"')[0]["kind"] == "password assignment"


@pytest.mark.parametrize(
    "line",
    [
        "the password field is required on sign-up",
        "reset the password: go to settings and pick a new one",
        "password: required",
        "password=<redacted>",
        "password=[REDACTED]",
        "password: ****",
        "password: ${DB_PASSWORD}",
        "password: $DB_PASS",
        "password: {{ vault_db_password }}",
        "password=your_password",
        "password=settings.db_password2",
        "password=os.environ['DB_PASS1']",
        "password = getpass()",
        "password_hash: abc12345",
        "the passwd file lists users",
        "Authorization: Bearer $TOKEN",
        "Authorization: Bearer <token>",
        "the Authorization header carries a bearer token",
        "hf_hub_download fetches a file",
        "npm_config_cache=/tmp/npm",
        "eyJ opens every JWT header",
        "-----BEGIN PGP PUBLIC KEY BLOCK-----",
        "glpat- tokens expire after a year",
    ],
)
def test_prose_and_placeholders_are_not_flagged(line: str) -> None:
    assert find_secrets(line) == []
    assert redact(line) == line


def test_a_daemon_never_injects_or_echoes_the_new_shapes(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    root = tmp_path / "memory"
    root.mkdir()
    for i, value in enumerate(SECRETS.values()):
        first_line = value.splitlines()[0]
        (root / f"reference_registry_{i}.md").write_text(
            f"---\nname: registry login {i}\ndescription: registry login with {first_line}\n"
            f"type: reference\n---\nlog in to the package registry: {value}\n"
        )
    (root / "reference_registry_clean.md").write_text(
        "---\nname: registry login\ndescription: registry login for the package registry\n"
        "type: reference\n---\nlog in to the package registry with the team account\n"
    )
    secrets_text = "\n".join(SECRETS.values())
    (root / "2025-06-01-10-00-shop.md").write_text(
        "---\nschema_version: 1.1\nproject-name: shop\nsession: 2025-06-01-10-00\n---\n"
        f"# shop\n\n## Session summary\nLogged in to the registry.\n\n## Notes\n{secrets_text}\n"
    )
    d = make_daemon(roots=[root])
    listing = d.call("list", {"dir": str(root)})
    flagged = {f["filename"] for f in listing["files"] if f.get("secret_lines")}
    assert flagged == {f"reference_registry_{i}.md" for i in range(len(SECRETS))} | {
        "2025-06-01-10-00-shop.md"
    }
    picked = d.call("select", {"dir": str(root), "query": "how do I log in to the registry"})
    assert {s["filename"] for s in picked["selected"]} <= {"reference_registry_clean.md"}
    loaded = d.call("load_last", {"dir": str(root), "project": "shop"})
    assert loaded["found"] is True
    d.stop()
    with sqlite3.connect(d.db) as conn:
        dump = "\n".join(conn.iterdump())
    for kind, piece in VALUE_PIECES.items():
        for where, text in (
            ("list", str(listing)),
            ("select", str(picked)),
            ("load_last", str(loaded)),
            ("index", dump),
        ):
            assert piece not in text, (kind, where)
            assert piece.lower() not in text.lower(), (kind, where)
