"""Every regex that runs over a file's text does work linear in that text, counted.

A memory or session file is hostile input: a 64 KB body ``a+a+…a+ x/y`` once
made the citation pattern rescan the run from every ``+`` (quadratic: a
minute of the writer for 64 KB, hours for 1 MiB). The steps of each pattern
are counted on a model of ``re``'s backtracking engine (tests/regex_steps.py),
at three sizes of the same input; linear work grows by the same amount from
n to 2n as from 2n to 4n (a ratio of 2), quadratic work by twice as much (4).
Counts, not times, so the result is the same on any machine and under any load.

Which patterns: every compiled pattern of the modules that analyse file text
(collected from the modules, so a new one is covered without being listed),
plus the few compiled per call. Inputs: the shapes that broke them, and shapes
hypothesis builds from each pattern's own matches, literals and classes.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from regex_steps import (
    StepLimit,
    alphabet,
    compile_steps,
    count_work,
    finditer_steps,
    fragments,
    growth,
    width,
)

from memoryd.indexer.citations import extract
from memoryd.indexer.parse import parse_bytes
from memoryd.indexer.records import KIND_MEMORY
from memoryd.select.analysis import analyse
from memoryd.select.candidates import Candidate
from memoryd.select.supersession import signals_of
from memoryd.select.tool_rules import commands_in
from memoryd.sessions._sections import SessionDoc, heading_text, parse_sections
from memoryd.sessions.brief import build_brief

TEXT_MODULES = (
    "memoryd.indexer.frontmatter",
    "memoryd.indexer.secrets",
    "memoryd.indexer.citations",
    "memoryd.select.supersession",
    "memoryd.select.tool_rules",
    "memoryd.select._text",
    "memoryd.select.manifest",
    "memoryd.select.claude",
    "memoryd.select.judge",
    "memoryd.sessions._sections",
    "memoryd.sessions._findings",
    "memoryd.sessions._collect",
    "memoryd.sessions._relevance",
    "memoryd.sessions.brief",
    "memoryd.report.findings",
)
"""The modules whose patterns see text from files (parsing, analysis, briefs, reports)."""

PER_CALL = {
    # memoryd.select.tool_rules: a tool name from a request, escaped.
    "tool_rules._mentions": re.compile(r"(?<![\w-])cargo\-nextest(?![\w-])", re.IGNORECASE),
    "tool_rules.usage_for": re.compile(
        r"usage (?:doc|guide|notes?) for (?:the\s+)?([\w.-]+)", re.IGNORECASE
    ),
    "tool_rules.subcommand": re.compile(r"\bcargo\-[a-z]"),
    "citations.line_digits": re.compile(r"\d+"),
}
"""Patterns built inside a function over file text (the rest are module constants)."""


def _collect() -> dict[str, re.Pattern[str]]:
    found: dict[str, re.Pattern[str]] = dict(PER_CALL)
    for name in TEXT_MODULES:
        module = importlib.import_module(name)
        short = name.rpartition(".")[2]
        for attr, value in vars(module).items():
            if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
                found[f"{short}.{attr}"] = value
            elif isinstance(value, tuple):  # secrets' (kind, pattern) table
                for item in value:
                    if isinstance(item, tuple) and len(item) == 2:
                        kind, pattern = item
                        if isinstance(pattern, re.Pattern):
                            found[f"{short}.{attr}[{kind}]"] = pattern
    return found


PATTERNS = _collect()
EXAMPLES = int(os.environ.get("MEMORYD_REGEX_EXAMPLES", "6"))
"""Generated shapes per pattern; a longer search: MEMORYD_REGEX_EXAMPLES=300 pytest this file."""


def test_every_pattern_is_modelled_and_covered() -> None:
    assert len(PATTERNS) > 50  # the collection found the modules' patterns
    for name, pattern in PATTERNS.items():
        compile_steps(pattern)  # raises Unsupported for a construct the model lacks
        assert name


KNOWN_SHAPES: list[tuple[str, Callable[[int], str], int]] = [
    # (pattern, input of size k, k at the smallest size)
    ("citations._PATH", lambda k: "a+" * k + " x/y", 200),  # the 64 KB body
    ("citations.MARKDOWN_LINK", lambda k: "[](" * k, 150),
    ("citations.MARKDOWN_LINK", lambda k: "/](](0[" * k, 60),
    ("citations.MARKDOWN_LINK", lambda k: '[](a "' + "[](a " * k, 80),
    ("findings.MARKDOWN_LINK", lambda k: "a<](][" * k, 80),
    ("secrets._PATTERNS[password in a connection URI]", lambda k: "a://b:<" * k, 60),
    ("secrets._PATTERNS[password in a connection URI]", lambda k: "a://b:" + "*" * k, 400),
    ("secrets._PATTERNS[Slack token]", lambda k: "xoxa-" * k, 80),
    ("_findings._VERIFIED", lambda k: "0" * k, 400),
    ("_findings.INSTRUCTION", lambda k: "curl " * k, 80),
    ("supersession._BANNER_LINE", lambda k: "note:" + " " * k + "x", 400),
    ("supersession._BANNER_LINE", lambda k: "this note is" + " " * k + "now" + " " * k, 200),
    ("supersession._FILENAME", lambda k: "a." * k + "md", 200),
    ("frontmatter._DELIM", lambda k: ("---" + " " * 20 + "x\n") * k, 20),
    ("_relevance._WORD", lambda k: "a" + "-" * k, 400),
]


@pytest.mark.parametrize(("name", "make", "base"), KNOWN_SHAPES)
def test_shapes_that_were_quadratic_are_linear(
    name: str, make: Callable[[int], str], base: int
) -> None:
    ratio, steps = growth(PATTERNS[name], make, base)
    assert ratio <= 2.5, f"{name}: steps grew {ratio:.1f}x per doubling ({steps:,} at 4n)"


def test_session_headings_are_linear_and_read_as_before() -> None:
    """``## a``, spaces, ``b``: the heading regex tried every split of the spaces (cubic)."""
    assert heading_text("## Key decisions ##") == "Key decisions"
    assert heading_text("##\tActive state") == "Active state"
    assert heading_text("###  x") is None and heading_text("## ") is None
    for spaces in (10_000, 40_000):  # would take hours with the old pattern
        sections = parse_sections("## Session summary\n- a" + " " * spaces + "b\n")
        assert sections.summary_text.startswith("a")


def _shapes(pattern: re.Pattern[str]) -> st.SearchStrategy[tuple[str, str, str]]:
    """(prefix, unit, suffix): the unit repeated between them is the input.

    Units are cut from the pattern's own matches or built from its literal
    runs and the characters it tests, so they get far into a match before
    failing, which is where backtracking costs.
    """
    chars = alphabet(pattern)
    pieces = st.sampled_from(sorted(set(chars) | set(fragments(pattern))))
    built = st.lists(pieces, min_size=1, max_size=5).map("".join)
    if width(pattern) == (1, 1):  # one character: nothing to backtrack, and from_regex
        cut = built  # takes seconds to build a huge class (frontmatter's _NOT_SIMPLE)
    else:
        match = st.from_regex(pattern, fullmatch=True)
        cut = st.tuples(match, st.integers(0, 40)).map(lambda mi: mi[0][: mi[1]] or mi[0])
    unit = st.one_of(cut, built, st.text(chars, min_size=1, max_size=6)).filter(bool)
    edge = st.one_of(st.just(""), cut, st.text(chars, max_size=3))
    return st.tuples(edge, unit.map(lambda u: u[:12]), edge)


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_every_pattern_is_linear_on_generated_shapes(name: str) -> None:
    pattern = PATTERNS[name]

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=EXAMPLES <= 6,
        suppress_health_check=list(HealthCheck),
    )
    @given(_shapes(pattern))
    def check(shape: tuple[str, str, str]) -> None:
        prefix, unit, suffix = shape
        base = max(1, 160 // len(unit))
        try:
            ratio, _steps = growth(pattern, lambda k: prefix + unit * k + suffix, base)
        except StepLimit as exc:
            raise AssertionError(f"{name}: over {exc} steps on {unit!r} x {base * 4}") from None
        assert ratio <= 2.5, f"{name}: {ratio:.1f}x per doubling on {(prefix, unit, suffix)!r}"

    check()


def test_the_model_agrees_with_re_on_matches() -> None:
    """The step counts mean something only if the model finds the matches ``re`` finds."""
    samples = {
        "citations._PATH": "see src/billing/tax.py:42 and ./docs/ but not /usr/bin or a+b/c",
        "citations.MARKDOWN_LINK": '[x](a.md) [y]( <b/c.py> "t") [z](http://e) [[w]](v)',
        "supersession._BANNER_LINE": "> **Note:** this memory is now superseded by x.md",
        "_findings._VERIFIED": "p95 fell to 120ms; 3.5 s; 99% green; v1.2.3ms",
    }
    for name, text in samples.items():
        _steps, spans = finditer_steps(PATTERNS[name], text)  # asserts equality with re
        assert spans, name


# -- a whole file's analysis ---------------------------------------------------------


def _analyse_memory(text: str) -> None:
    """Everything done to one memory's text: at index time and when its folder is loaded."""
    parsed = parse_bytes(text.encode(), KIND_MEMORY)
    analyse("feedback_hostile.md", parsed.name, parsed.description, parsed.body)
    extract(parsed.description, parsed.body)
    candidate = Candidate(
        "feedback_hostile.md", "hostile", parsed.description or "", "feedback", parsed.body, 0.0
    )
    signals_of(candidate)
    commands_in(parsed.body)


def _brief_over(text: str) -> None:
    docs = [
        SessionDoc(
            path=f"/m/2025-01-0{day}-10-00-p.md",
            filename=f"2025-01-0{day}-10-00-p.md",
            project="p",
            session=f"2025-01-0{day}-10-00",
            text=text,
            error=None,
        )
        for day in (1, 2)
    ]
    build_brief("the tokens cache replaced", docs, scope="test", budget_tokens=4000)


_LINE = (
    "- tried src/cache/tokens.py:{i} but `cargo test` failed; see [old](a/b{i}.md) "
    "and postgres://u:<pw>@h/db - 12.5ms? sk-{i} this note is {i}\n"
)
WHOLE_FILE_SHAPES: list[tuple[str, Callable[[str], None], Callable[[int], str]]] = [
    ("memory: a+a+... x/y", _analyse_memory, lambda k: "---\ndescription: d\n---\n" + "a+" * k),
    (
        "memory: many busy lines",
        _analyse_memory,
        lambda k: "---\ndescription: d\n---\n" + "".join(_LINE.format(i=i) for i in range(k)),
    ),
    (
        "session: many open questions and decisions",
        _brief_over,
        lambda k: (
            "---\nproject-name: p\n---\n## Session summary\nthe tokens cache\n\n"
            + "## Active state\n"
            + "".join(f"- open question about the tokens cache w{i}?\n" for i in range(k))
            + "\n## Key decisions\n"
            + "".join(f"- decided to replace the tokens cache w{i} instead\n" for i in range(k))
        ),
    ),
]


@pytest.mark.parametrize(
    ("what", "analyse", "make"), WHOLE_FILE_SHAPES, ids=[s[0] for s in WHOLE_FILE_SHAPES]
)
def test_a_files_whole_analysis_grows_linearly(
    what: str, analyse: Callable[[str], None], make: Callable[[int], str]
) -> None:
    """Python lines run and characters handed to regexes, at k and 4k: at most ~4x.

    Together with each pattern being linear in its input (above), that is work
    linear in the file. The brief's caps make it grow less than that.
    """
    modules = [importlib.import_module(name) for name in TEXT_MODULES]
    small = count_work(lambda: analyse(make(150)), modules)
    large = count_work(lambda: analyse(make(600)), modules)
    for label, a, b in zip(("python lines", "regex chars"), small, large, strict=True):
        assert b <= 4.6 * a, f"{what}: {label} grew {b / a:.1f}x for 4x the text"
