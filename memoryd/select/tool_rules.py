"""Telling a tool's usage docs apart from warnings about it.

When the agent has just run a CLI (``pytest``, ``terraform``, ``gradle``), a
memory explaining how to run that CLI is redundant: the agent is already
driving it. A memory warning about a trap in that CLI is the opposite: active
use is exactly when it matters. This module draws that line from the memory's
own text, so it works on folders nobody has labelled:

* Usage docs are reference material (``type: reference``, or text that calls
  itself a usage doc / command reference) whose subject is the tool: the tool
  is named in the filename, title or description, or the body shows commands
  that invoke it.
* Anything that reads as a warning (gotcha, pitfall, "never", "don't", known
  issue), and any feedback, project or user memory, is never a usage doc.

Claude Code's own tools (``Read``, ``Bash``, ``mcp__...``) have no usage docs in
a memory folder, so they never exclude anything.
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
BODY_COMMAND_SHARE = 0.6
"""Share of a body's command lines that must invoke the tool when the header does not name it."""
_NOT_USAGE_TYPES = frozenset({"feedback", "project", "user"})

_WRAPPERS = {"gradle": ("gradlew",), "mvn": ("mvnw",), "docker": ("docker-compose",)}
"""Launch scripts that stand for the tool itself in command lines."""


def _is_slug(name: str) -> bool:
    """``pytest-usage``: two or more lowercase ASCII words or numbers joined by hyphens.

    Split, not a regex: the pattern ``[a-z0-9]+(?:-[a-z0-9]+)+`` backtracks
    quadratically on a long run of letters (tests/test_regex_linear.py).
    """
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
    """The program of each command line of a body, in order.

    Command lines are backticked ``cmd args`` spans in the prose, then the
    lines of shell code blocks (a fence without a language counts as one),
    prompt (``$``) and ``sudo`` stripped.
    """
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


def _invocation_share(c: Candidate, alias: str) -> float:
    """Share of the body's command lines that start with the tool."""
    commands = c.commands if c.commands is not None else commands_in(c.body)
    if not commands:
        return 0.0
    return sum(1 for cmd in commands if cmd == alias) / len(commands)


def _is_warning(c: Candidate) -> bool:
    header = f"{c.filename.replace('_', ' ')} {c.name} {c.description}"
    return _WARNING.search(header) is not None


def is_tool_usage_doc(c: Candidate, tool: str) -> bool:
    """True when c is usage reference / API documentation for ``tool``.

    False for warnings, gotchas and known issues about the tool (those stay
    eligible while the tool is in use) and for memories about something else.
    """
    if _is_builtin(tool) or c.type in _NOT_USAGE_TYPES or _is_warning(c):
        return False
    header = f"{c.filename.removesuffix('.md').replace('_', ' ')}\n{c.name}\n{c.description}"
    if c.type != "reference" and not _USAGE_SELF_LABEL.search(header):
        return False
    aliases = _aliases(tool)
    if _names_sibling_tool(c, aliases):
        return False
    if any(_mentions(c.filename.removesuffix(".md").replace("_", " "), a) for a in aliases):
        return True
    if any(_mentions(c.name, a) for a in aliases):
        return True
    if any(_subject_of_description(c.description, a) for a in aliases):
        return True
    if _names_other_subject(c, aliases):
        return False
    return any(_invocation_share(c, a) >= BODY_COMMAND_SHARE for a in aliases)


def _subject_of_description(description: str, alias: str) -> bool:
    """The description calls itself a usage doc *for the tool*, not for something near it.

    "Usage doc for cargo bench" and "how shop-backend uses the Stripe API" make
    the tool the subject; "Usage doc for the Terraform linters" is about tools
    around terraform, so a following word naming an add-on category blocks it.
    """
    a = re.escape(alias)
    label = r"(?:usage (?:doc|guide|notes?)\s+for|how\s+[\w-]+\s+uses?|how (?:we|to) (?:run|use))"
    pattern = rf"{label}\s+(?:the\s+)?{a}(?![\w-])(?!\s+(?:{_ADDON_NOUNS})\b)"
    return re.search(pattern, description, re.IGNORECASE) is not None


def _names_other_subject(c: Candidate, aliases: Sequence[str]) -> bool:
    """Whether the description calls itself a usage doc for something else ("for fastlane")."""
    m = re.search(r"usage (?:doc|guide|notes?) for (?:the\s+)?([\w.-]+)", c.description, re.I)
    return m is not None and m.group(1).lower() not in aliases


def _names_sibling_tool(c: Candidate, aliases: Sequence[str]) -> bool:
    """Whether the title or description is about a plugin of the tool ("cargo-fuzz", "cargo-dist").

    Such plugins are separate CLIs with their own docs, so running the parent
    tool does not make their docs redundant. CLI names are written in lower
    case, which keeps prose compounds such as "Cross-compilation" out.
    """
    # A kebab-case slug (Claude Code's ``name:`` format, "pytest-usage") is an
    # identifier whose hyphens join words, not a CLI's name: only prose counts.
    name = "" if _is_slug(c.name or "") else c.name
    header = f"{name} {c.description}"
    return any(re.search(rf"\b{re.escape(a)}-[a-z]", header) for a in aliases)


def tool_usage_docs(cands: Sequence[Candidate], recent_tools: Sequence[str]) -> set[str]:
    """Filenames of candidates that are usage docs for any tool in ``recent_tools``."""
    tools = [t for t in dict.fromkeys(recent_tools) if not _is_builtin(t)]
    if not tools:  # the usual case: no candidate need be looked at
        return set()
    return {c.filename for c in cands for t in tools if is_tool_usage_doc(c, t)}
