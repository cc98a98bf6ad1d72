"""The Markdown form of a compaction report: a summary, then a section per directory with
something to say."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memoryd._delivery import MAX_FILE_BYTES, MAX_FILE_LINES
from memoryd.report.findings import MAX_BYTES, MAX_LINES
from memoryd.staleness.render import problems

if TYPE_CHECKING:
    from memoryd.report.document import DirectoryReport, Report

CAP_TEXT = f"{MAX_FILE_BYTES // 1024} KB / {MAX_FILE_LINES} lines"

NOTICE = (
    "Nothing was deleted or rewritten. memoryd only reads memory folders; this report "
    "lists what a person or an agent could condense or fix."
)

SUMMARY_LABELS = (
    ("directories", "directories"),
    ("files", "files"),
    ("old_sessions", "old sessions"),
    ("condense_candidates", "sessions superseded by a later completed one"),
    ("stale_work", "stale in-progress/paused work"),
    ("broken_files", "broken files"),
    ("memory_index_issues", "MEMORY.md problems"),
    ("duplicates", "duplicate groups"),
    ("superseded_memories", "superseded memories"),
    ("secret_files", "files that look like they hold credentials"),
    ("oversized", f"memories over the hook's {CAP_TEXT} cap"),
    ("never_selected", "memories never selected"),
    ("code_drift", "memories citing code that changed or vanished"),
)


def _code(name: str) -> str:
    return f"`{name}`"


def _sessions(d: DirectoryReport) -> list[str]:
    out = []
    for g in d["old_sessions"]:
        out.append(
            f"- **{g['project']}**: {g['count']} session(s), {g['bytes']:,} bytes, "
            f"{g['first'][:10]} to {g['last'][:10]}: {', '.join(map(_code, g['files']))}"
        )
        if g["superseded"]:
            by = g["superseded"][0]["superseded_by"]
            names = ", ".join(_code(s["file"]) for s in g["superseded"])
            out.append(
                f"  - could be condensed into one summary (completed later in `{by}`): {names}"
            )
    return out


def _stale(d: DirectoryReport) -> list[str]:
    return [
        f"- **{s['project']}**: `{s['file']}` is {s['status']}"
        f"{' at ' + str(s['last_checkpoint']) if s['last_checkpoint'] else ''}, "
        f"untouched since {s['last_touched'][:10]} ({s['age_days']} days)"
        for s in d["stale_work"]
    ]


def _index(d: DirectoryReport) -> list[str]:
    h = d["memory_index"]
    if h is None:
        return []
    if h["missing"]:
        return ["- no MEMORY.md: agents that read only the index see none of these memories"]
    out = []
    if h["oversize"]:
        out.append(
            f"- {h['lines']} lines, {h['bytes']:,} bytes: over {MAX_LINES} lines or "
            f"{MAX_BYTES // 1024} KB, "
            "agents cut off the rest"
        )
    out += [f"- line {x['line']}: links to missing `{x['target']}`" for x in h["dead_links"]]
    out += [f"- `{name}` is not listed" for name in h["unlisted"]]
    out += [f"- line {x['line']}: `{x['target']}` has no description" for x in h["no_hook"]]
    return out


def _usage(d: DirectoryReport) -> list[str]:
    u = d["usage"]
    if u is None:
        return []
    top = ", ".join(f"`{m['file']}` ({m['count']})" for m in u["most_selected"]) or "none"
    never = ", ".join(map(_code, u["never_selected"])) or "none"
    return [f"- {u['runs']} selector run(s); most selected: {top}", f"- never selected: {never}"]


def _sections(d: DirectoryReport) -> list[tuple[str, list[str]]]:
    return [
        ("Old sessions", _sessions(d)),
        ("Stale work", _stale(d)),
        (
            "Broken files",
            [f"- `{b['file']}`: {b['reason']}" for b in d["broken_files"]],
        ),
        ("MEMORY.md health", _index(d)),
        (
            "Duplicates",
            [f"- {g['match']}: {', '.join(map(_code, g['files']))}" for g in d["duplicates"]]
            + [
                f"- `{s['file']}` is superseded by `{s['superseded_by']}`"
                if s["superseded_by"]
                else f"- `{s['file']}` says it is superseded (no successor named)"
                for s in d["superseded_memories"]
            ],
        ),
        (
            "Possible credentials (line numbers only)",
            [
                f"- `{s['file']}`: "
                + ", ".join(f"line {x['line']} ({x['kind']})" for x in s["lines"])
                for s in d["secrets"]
            ],
        ),
        (
            f"Oversized memories (the hook shows only the first {CAP_TEXT}: condense or split)",
            [
                f"- `{o['file']}`: {o['bytes']:,} bytes, {o['lines']:,} lines"
                for o in d["oversized"]
            ],
        ),
        ("Usage", _usage(d)),
        (
            "Memories citing code that changed or vanished",
            [
                f"- `{m['filename']}`: {'; '.join(problems(m['staleness']))}"
                for m in d["code_drift"]
            ],
        ),
    ]


def render_markdown(report: Report) -> str:
    """The whole report as Markdown, ending with a newline."""
    lines = [
        f"# memoryd compaction report, {report['date']}",
        "",
        f"> {report['notice']}",
        "",
        f"Generated {report['generated_at']}; threshold {report['older_than_days']:g} days; "
        f"roots: {', '.join(map(_code, report['roots']))}.",
        "",
        "| finding | count |",
        "|---|---:|",
    ]
    lines += [f"| {label} | {report['summary'][key]} |" for key, label in SUMMARY_LABELS]
    for d in report["directories"]:
        sections = [(title, body) for title, body in _sections(d) if body]
        if not sections:
            continue
        lines += ["", f"## {d['path']}", "", f"{d['files']} files, {d['bytes']:,} bytes."]
        for title, body in sections:
            lines += ["", f"### {title}", "", *body]
    return "\n".join(lines) + "\n"
