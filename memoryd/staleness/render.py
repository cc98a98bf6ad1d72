"""Verdicts in words: the hook's one-line caution (the first problems, the rest counted) and
the ``check`` command's text."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memoryd.check_replies import CheckResult, Verdict

MAX_NAMED = 2


GUESSED = "guessed from the folder name"
"""How a checkout found only by decoding the memory folder's name is named wherever it is shown."""


def problems(verdict: Verdict) -> list[str]:
    """One phrase per stale citation, vanished and moved paths first; outside git or in a
    guessed checkout a missing path is only "not found" there, and the phrase says why."""
    doubts = [GUESSED] if verdict.get("checkout_guessed") else []
    if verdict.get("head") is None:
        doubts.append("not a git checkout")
    out = [
        f"cites `{path}`, not found in {verdict.get('checkout')} ({'; '.join(doubts)})"
        if doubts
        else f"cites `{path}`, which no longer exists"
        for path in verdict.get("missing", [])
    ]
    out += [
        f"cites `{old}`, which no longer exists; renamed to `{new}`"
        for old, new in verdict.get("renamed", {}).items()
    ]
    for change in verdict.get("changed_since", []):
        commits = change["commits"]
        out.append(
            f"cites `{change['path']}`, changed by {commits} commit{'s' if commits != 1 else ''} "
            f"since this memory was written (newest {change['newest'][:10]})"
        )
    return out


def caution(verdict: Verdict | None) -> str | None:
    """The hook's one-line warning, or None when the memory is not stale."""
    if not verdict or not verdict.get("stale"):
        return None
    found = problems(verdict)
    text = "; ".join(found[:MAX_NAMED])
    if len(found) > MAX_NAMED:
        text += f"; and {len(found) - MAX_NAMED} more"
    return f"Caution: {text}."


def render_check(result: CheckResult) -> str:
    """``memoryd check`` without ``--json``: each folder's checkout, then each stale memory."""
    lines = []
    for folder in result["folders"]:
        checkout = folder["checkout"]
        if checkout["path"] is None:
            lines.append(f"{folder['dir']}: no checkout ({checkout['reason']})")
        else:
            # checks.SOURCE_FOLDER_NAME, spelt out: the hook imports this module, not that one.
            guessed = checkout["source"] == "folder-name"
            source = GUESSED if guessed else f"from {checkout['source']}"
            lines.append(
                f"{folder['dir']}: checkout {checkout['path']} "
                f"({source}; {folder['mode'] or 'not checked'})"
            )
    for memory in result["memories"]:
        if memory["staleness"]:
            lines += [
                f"  {memory['filename']}: {problem}" for problem in problems(memory["staleness"])
            ]
    lines.append(f"{result['stale']} of {result['citing']} memories citing code are stale.")
    lines += [f"{f['path']}: {f['problem']}" for f in result.get("findings", [])]
    lines += [f"warning: {w['path']}: {w['warning']}" for w in result.get("warnings", [])]
    return "\n".join(lines)
