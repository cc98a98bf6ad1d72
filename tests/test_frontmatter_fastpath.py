"""The frontmatter fast path must agree with yaml on every header it accepts.

``fast_mapping`` returns None for anything it is not sure about; whenever it
returns a mapping, that mapping must equal (keys, values, types and order) what
yaml loads. Checked on every header of the development corpus and on a few
hundred generated tricky headers (fixed seed, so failures reproduce).
"""

from __future__ import annotations

import random
from typing import Any

import pytest
import yaml
from conftest import CORPUS

from memoryd.indexer.frontmatter import FrontmatterError, fast_mapping, load_mapping_yaml, split


def _yaml_outcome(text: str, loader: Any) -> tuple[str, Any]:
    try:
        data = yaml.load(text, Loader=loader)
    except yaml.YAMLError:
        return ("error", None)
    if not isinstance(data, dict):
        return ("not-mapping", None)
    return ("ok", [(str(k), v) for k, v in data.items()])


def _check(text: str) -> bool:
    """Assert agreement; return True when the fast path took the header."""
    fast = fast_mapping(text)
    if fast is None:
        return False
    got = list(fast.items())
    loaders: list[Any] = [getattr(yaml, "CSafeLoader", yaml.SafeLoader), yaml.SafeLoader]
    for loader in loaders:
        kind, want = _yaml_outcome(text, loader)
        assert kind == "ok", f"fast path accepted a header yaml rejects: {text!r}"
        assert got == want, f"{loader.__name__} disagrees on {text!r}"
        assert all(type(v) is str for _, v in want)
    assert load_mapping_yaml(text) == fast
    return True


def _corpus_headers() -> list[tuple[str, str]]:
    headers = []
    for path in sorted(CORPUS.rglob("*.md")):
        text = path.read_bytes().decode("utf-8", errors="replace").lstrip("\ufeff")
        text = text.replace("\r\n", "\n")
        try:
            yaml_text, _body = split(text)
        except FrontmatterError:
            continue
        headers.append((str(path), yaml_text))
    return headers


def test_fast_path_matches_yaml_on_corpus() -> None:
    headers = _corpus_headers()
    assert len(headers) > 60
    taken = sum(_check(text) for _path, text in headers)
    # Most memory headers are simple; sessions (nested maps, numbers) fall back.
    assert taken > len(headers) // 2


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


def test_fast_path_matches_yaml_on_generated_headers() -> None:
    rng = random.Random(20261130)
    taken = 0
    total = 600
    for _ in range(total):
        taken += _check(_header(rng))
    # The generator must exercise both paths, or the test proves nothing.
    assert 30 < taken < total


@pytest.mark.parametrize("word", [w for w in RESERVED if w])
def test_bool_and_null_words_are_never_taken(word: str) -> None:
    assert fast_mapping(f"name: {word}\n") is None
    assert fast_mapping(f"{word}: value\n") is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("name: a b\ndescription: c d\ntype: user\n", {"name": "a b", "description": "c d"}),
        ('description: "x: y # z"\n', {"description": "x: y # z"}),
        ("description: 'say \"hi\"'\n", {"description": 'say "hi"'}),
        ("description: trailing   \n", {"description": "trailing"}),
        ("name: a\n\ndescription: b\n", {"name": "a", "description": "b"}),
    ],
)
def test_fast_path_accepts_simple_headers(text: str, expected: dict[str, str]) -> None:
    got = fast_mapping(text)
    assert got is not None
    assert {k: got[k] for k in expected} == expected
    assert _check(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n\n",
        "description: a: b\n",
        "description: a #b\n",
        "description: 1.1\n",
        "description: [a]\n",
        'description: "a\\nb"\n',
        "description: 'it''s'\n",
        "description:\tx\n",
        "description: x\n  more\n",
        "- a\n- b\n",
    ],
)
def test_fast_path_declines_anything_else(text: str) -> None:
    assert fast_mapping(text) is None
