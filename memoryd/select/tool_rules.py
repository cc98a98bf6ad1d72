"""Telling a tool's usage docs (left out while the agent runs the tool) from warnings about it.

A usage doc is reference material whose subject is the tool (named in its header,
or invoked by most of its body's commands); a warning or a feedback, project or
user memory never is; Claude Code's own tools exclude nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memoryd.select.candidates import Candidate

_WARNING = re.compile(
    r"\b(?:gotchas?|warnings?|pitfalls?|caveats?|known issues?|beware|footguns?|traps?|"
    r"never|don'?t|do not|avoid|must not)\b",
    re.IGNORECASE,
)
_USAGE_SELF_LABEL = re.compile(
    r"\b(?:usage (?:doc|guide|notes?)|how (?:we|to) (?:run|use|invoke)|cheat ?sheet|"
    r"command reference|cli reference)\b",
    re.IGNORECASE,
)
_ADDON_NOUNS = "linters?|plugins?|extensions?|wrappers?|providers?"
BODY_COMMAND_SHARE = 0.6  # of a body's command lines, invoking the tool when no header names it
_NOT_USAGE_TYPES = frozenset({"feedback", "project", "user"})

_WRAPPERS = {"gradle": ("gradlew",), "mvn": ("mvnw",), "docker": ("docker-compose",)}


def _is_slug(name: str) -> bool:
    """``pytest-usage``: lowercase ASCII words or numbers joined by hyphens."""
    parts = name.split("-")
    return len(parts) > 1 and all(p.isascii() and p.isalnum() and p == p.lower() for p in parts)


def _is_builtin(tool: str) -> bool:
    """Claude Code's built-in and MCP tools are capitalised or ``mcp__``-prefixed."""
    return not tool or tool[0].isupper() or tool.startswith("mcp__")


def _aliases(tool: str) -> tuple[str, ...]:
    """Spellings of ``tool`` in prose and commands: ``cargo-nextest`` is also ``nextest``."""
    name = tool.lower()
    out = [name, *_WRAPPERS.get(name, ())]
    if "-" in name:
        prefix, _, sub = name.partition("-")
        out += [sub, f"{prefix} {sub}"]
    return tuple(dict.fromkeys(out))


def _mentions(text: str, alias: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(alias)}(?![\w-])", text, re.IGNORECASE) is not None


_COMMAND_SPAN = re.compile(r"`((?:\./)?[a-z][\w.-]*)\s[^`]*`")
_SHELL_FENCES = frozenset(("", "bash", "sh", "shell", "console", "zsh", "fish", "terminal"))
_SHELL_FENCES |= frozenset(("powershell", "pwsh", "ps1", "ps", "cmd", "bat"))
_FENCED_COMMAND = re.compile(
    r"[ \t]*(?:[$>%#][ \t]+)?(?:sudo[ \t]+)?((?:\./)?[a-z][\w.-]*)[ \t]+\S"
)


def commands_in(body: str) -> tuple[str, ...]:
    """The program of each command of a body: backticked ``cmd args`` spans in the prose, then
    the lines of shell code blocks."""
    if "```" not in body:
        found = [m.group(1) for m in _COMMAND_SPAN.finditer(body)]
    else:
        prose: list[str] = []
        fenced: list[str] = []
        shell: bool | None = None  # None: outside a fence; else whether the fence is shell
        for line in body.splitlines():
            stripped = line.lstrip()
            if stripped.startswith("```"):
                info = stripped[3:].strip().split(" ", 1)[0].lower()
                shell = None if shell is not None else info in _SHELL_FENCES
            elif shell is None:
                prose.append(line)
            elif shell and (m := _FENCED_COMMAND.match(line)) is not None:
                fenced.append(m.group(1))
        found = [m.group(1) for m in _COMMAND_SPAN.finditer("\n".join(prose))] + fenced
    return tuple(cmd.lower().removeprefix("./") for cmd in found)


def is_tool_usage_doc(c: Candidate, tool: str) -> bool:
    """True when ``c`` is usage reference / API documentation for ``tool``."""
    stem = c.filename.removesuffix(".md").replace("_", " ")
    header = f"{stem}\n{c.name}\n{c.description}"
    if _is_builtin(tool) or c.type in _NOT_USAGE_TYPES or _WARNING.search(header):
        return False
    if c.type != "reference" and not _USAGE_SELF_LABEL.search(header):
        return False
    aliases = _aliases(tool)
    # About a plugin of the tool ("cargo-fuzz"): a CLI with its own docs. A kebab-case
    # ``name:`` ("pytest-usage") is an identifier, not prose: it does not count.
    prose = f"{'' if _is_slug(c.name or '') else c.name} {c.description}"
    if any(re.search(rf"\b{re.escape(a)}-[a-z]", prose) for a in aliases):
        return False
    if any(
        _mentions(stem, a) or _mentions(c.name, a) or _subject_of_description(c.description, a)
        for a in aliases
    ):
        return True
    other = re.search(r"usage (?:doc|guide|notes?) for (?:the\s+)?([\w.-]+)", c.description, re.I)
    if other is not None and other.group(1).lower() not in aliases:
        return False  # a usage doc for something else ("for fastlane")
    commands = c.commands if c.commands is not None else commands_in(c.body)
    return bool(commands) and any(
        commands.count(a) / len(commands) >= BODY_COMMAND_SHARE for a in aliases
    )


def _subject_of_description(description: str, alias: str) -> bool:
    """The description calls itself a usage doc for the tool, not for add-ons around it."""
    a = re.escape(alias)
    label = r"(?:usage (?:doc|guide|notes?)\s+for|how\s+[\w-]+\s+uses?|how (?:we|to) (?:run|use))"
    pattern = rf"{label}\s+(?:the\s+)?{a}(?![\w-])(?!\s+(?:{_ADDON_NOUNS})\b)"
    return re.search(pattern, description, re.IGNORECASE) is not None


def tool_usage_docs(cands: Sequence[Candidate], recent_tools: Sequence[str]) -> set[str]:
    """Filenames of candidates that are usage docs for any tool in ``recent_tools``."""
    tools = [t for t in dict.fromkeys(recent_tools) if not _is_builtin(t)]
    if not tools:  # the usual case: no candidate need be looked at
        return set()
    return {c.filename for c in cands for t in tools if is_tool_usage_doc(c, t)}
