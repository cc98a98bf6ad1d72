"""Frontmatter YAML: what a header loads as, and the errors a person reads to fix it.

Most headers in real folders are a few ``key: words`` lines, but anything YAML
allows turns up: quoted values, odd keys, nested ``metadata:``, words YAML
reads as booleans or dates. Whatever the header, loading it gives a mapping
with string keys or a :class:`FrontmatterError` whose message says what is
wrong, never another exception (checked on a few hundred generated headers,
fixed seed, so failures reproduce).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from memoryd.indexer.frontmatter import FrontmatterError, load_mapping
from memoryd.indexer.parse import parse_file

KEYS = [
    "name",
    "description",
    "type",
    "project-name",
    "target_dir",
    "_private",
    "a",
    "yes",
    "No",
    "ON",
    "oFF",
    "true",
    "Null",
    "y",
    "N",
    "k" * 200,
    "with space",
    "1key",
    "key#",
    "ke'y",
]
WORDS = ["deploy", "cache", "pytest", "Grafana", "x", "naïve", "日本語", "emoji🙂", "C#", "a-b"]
RESERVED = [
    "yes",
    "Yes",
    "YES",
    "yEs",
    "no",
    "No",
    "NO",
    "nO",
    "true",
    "True",
    "TRUE",
    "tRUE",
    "false",
    "False",
    "FALSE",
    "on",
    "On",
    "ON",
    "off",
    "Off",
    "OFF",
    "null",
    "Null",
    "NULL",
    "nULL",
    "y",
    "Y",
    "n",
    "N",
    "~",
    "",
]
ODD_VALUES = [
    "1.1",
    "5",
    "0x1F",
    "1_000",
    "2025-03-24",
    "2025-03-24T15:48:00Z",
    ".inf",
    ".NaN",
    "-1",
    "+1",
    "12:30:00",
    "=",
    "<<",
    "[a, b]",
    "{a: b}",
    "a [b] {c}",
    "a, b",
    "&anchor a",
    "*alias",
    "!tag a",
    "!!str a",
    "|",
    ">",
    "%x",
    "@x",
    "`x`",
    "- a",
    "? a",
    "a: b",
    "a:b",
    "a:",
    "a #b",
    "a#b",
    "a ## b",
    "a\tb",
    "a \u00a0#b",
    "a\u2028b",
    "a\u0085b",
    "a\ufeffb",
    "a\x07b",
    "a\x7fb",
    "a\rb",
    "a\ufffeb",
    '"quoted"',
    '"with: colon # and hash"',
    '"esc\\"aped"',
    '"tab\\tescape"',
    '"unterminated',
    '"a" "b"',
    '"a"b',
    "'single'",
    "'it''s'",
    "'a' b",
    "'unterminated",
    "''",
    '""',
    "'  spaced  '",
    '"  spaced  "',
    "it's fine",
    'say "hi"',
    "a --- b",
    "a ... b",
    "ends with space   ",
    "É accented start",
    "ª ordinal",
    "\u0301combining",
    "https://example.com:8080/x",
    "a \\ b",
    "a | b > c",
]


def _value(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.35:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6)))
    if roll < 0.55:
        return rng.choice(RESERVED)
    if roll < 0.85:
        return rng.choice(ODD_VALUES)
    # A word glued to an odd value, so odd characters land mid-scalar too.
    return rng.choice(WORDS) + rng.choice(["", " "]) + rng.choice(ODD_VALUES)


def _line(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.04:
        return ""
    if roll < 0.06:
        return "# a comment"
    if roll < 0.08:
        return "  indented: continuation"
    if roll < 0.09:
        return "---"
    key = rng.choice(KEYS[:7]) if rng.random() < 0.8 else rng.choice(KEYS)
    sep = rng.choice([": ", ": ", ": ", ":  ", ":\t", ":", " : "])
    return f"{key}{sep}{_value(rng)}"


def _header(rng: random.Random) -> str:
    lines = [_line(rng) for _ in range(rng.randint(1, 5))]
    return "\n".join(lines) + rng.choice(["\n", "", "\n\n"])


def test_generated_headers_load_as_string_keyed_mappings_or_fail_with_a_message() -> None:
    rng = random.Random(20261130)
    loaded = 0
    total = 600
    for _ in range(total):
        text = _header(rng)
        try:
            fields = load_mapping(text)
        except FrontmatterError as exc:
            assert str(exc), text
            continue
        assert all(type(k) is str for k in fields), text
        loaded += 1
    # The generator must produce both outcomes, or the test proves nothing.
    assert 30 < loaded < total


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("name: a b\ndescription: c d\ntype: user\n", {"name": "a b", "description": "c d"}),
        ('description: "x: y # z"\n', {"description": "x: y # z"}),
        ("description: 'say \"hi\"'\n", {"description": 'say "hi"'}),
        ("description: trailing   \n", {"description": "trailing"}),
        ("name: a\n\ndescription: b\n", {"name": "a", "description": "b"}),
        ("description: a #b\n", {"description": "a"}),
        ("description: 'it''s'\n", {"description": "it's"}),
        ('description: "a\\nb"\n', {"description": "a\nb"}),
        ("description:\tx\n", {"description": "x"}),
        ("description: x\n  more\n", {"description": "x more"}),
    ],
)
def test_headers_load_as_yaml_reads_them(text: str, expected: dict[str, str]) -> None:
    got = load_mapping(text)
    assert {k: got[k] for k in expected} == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1key: v\n", {"1key": "v"}),
        ("with space: v\n", {"with space": "v"}),
        ("ke'y: v\n", {"ke'y": "v"}),
        ("key#: v\n", {"key#": "v"}),
        ("project-name: p\n", {"project-name": "p"}),
        ("yes: value\n", {"True": "value"}),
        ("description: 1.1\n", {"description": 1.1}),
        ("description: [a]\n", {"description": ["a"]}),
        (
            "name: n\nmetadata:\n  type: user\n  originSessionId: abc\n",
            {"name": "n", "metadata": {"type": "user", "originSessionId": "abc"}},
        ),
    ],
)
def test_odd_keys_other_types_and_nested_metadata(text: str, expected: dict[str, object]) -> None:
    assert load_mapping(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "frontmatter is empty"),
        ("\n\n", "frontmatter is empty"),
        ("description: a: b\n", "YAML syntax error in frontmatter at line 2, column 15"),
        ("name: [unclosed\n", "YAML syntax error in frontmatter at line 3"),
        ("- a\n- b\n", "frontmatter is a YAML list, not a mapping"),
        ("a: *x\n", "YAML alias '\\*x' at line 2"),
    ],
)
def test_malformed_yaml_says_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(FrontmatterError, match=message):
        load_mapping(text)


@pytest.mark.parametrize(
    ("word", "error", "name"),
    [
        ("yes", "'name' must be a string, got bool", None),
        ("True", "'name' must be a string, got bool", None),
        ("oFF", None, "oFF"),  # YAML 1.1 booleans are one case throughout: this is text
        ("OFF", "'name' must be a string, got bool", None),
        ("null", None, None),  # as if there were no name
        ("~", None, None),
        ("y", None, "y"),  # PyYAML leaves y/n as text
        ("N", None, "N"),
    ],
)
def test_words_yaml_reads_as_booleans_or_null_in_a_memory_header(
    tmp_path: Path, word: str, error: str | None, name: str | None
) -> None:
    path = tmp_path / "feedback_x.md"
    path.write_text(f"---\nname: {word}\ndescription: d\ntype: user\n---\nbody\n")
    parsed = parse_file(str(path), path.name, path.stat().st_size)
    assert (parsed.error, parsed.name) == (error, name)
