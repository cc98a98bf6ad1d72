"""Synthetic memory folders for benchmarks, with the word statistics of real text.

Words are drawn with Zipf (1/rank) frequencies from a vocabulary in
frequency order: the development corpus's own words when it is present
(``../shared/bench/coding-memories``), padded with pronounceable made-up
words, so a query word is as common or as rare as it would be in real
memories and posting lists have realistic lengths. Field lengths follow the
development corpus: titles of 2-7 words, descriptions of 12-31 (median 20),
bodies log-normal around 70 words (10th-90th percentile ~45-100).
"""

from __future__ import annotations

import math
import random
import re
from itertools import accumulate
from pathlib import Path

from memoryd.select._text import STOPWORDS

TYPES = ("user", "feedback", "project", "reference")
SHARED_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "bench" / "coding-memories"
VOCABULARY_SIZE = 5000
_WORD = re.compile(r"[a-z0-9]+")


def zipf_vocabulary(size: int = VOCABULARY_SIZE, seed: int = 5) -> list[str]:
    """Words in frequency-rank order: the development corpus's, then made-up ones."""
    counts: dict[str, int] = {}
    if SHARED_CORPUS.is_dir():
        for path in sorted(SHARED_CORPUS.rglob("*.md")):
            for w in _WORD.findall(path.read_text(errors="replace").lower()):
                if len(w) >= 3 and not w.isdigit():
                    counts[w] = counts.get(w, 0) + 1
    words = [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    rng = random.Random(seed)
    seen = set(words)
    while len(words) < size:
        w = "".join(rng.choice("bcdfgklmnprstvz") + rng.choice("aeiou") for _ in range(3))
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words[:size]


class ZipfText:
    """Draws words at Zipf frequencies; ``content`` skips function words (for titles)."""

    def __init__(self, vocab: list[str], seed: int) -> None:
        self.vocab = vocab
        self.rng = random.Random(seed)
        self.cum = list(accumulate(1.0 / (rank + 1) for rank in range(len(vocab))))
        self.content = [w for w in vocab if w not in STOPWORDS]
        self.content_cum = list(accumulate(1.0 / (rank + 1) for rank in range(len(self.content))))

    def words(self, k: int) -> list[str]:
        return self.rng.choices(self.vocab, cum_weights=self.cum, k=k)

    def topic(self, k: int) -> list[str]:
        return self.rng.choices(self.content, cum_weights=self.content_cum, k=k)

    def body_length(self) -> int:
        return max(20, min(400, round(self.rng.lognormvariate(math.log(70), 0.3))))


def write_memory(path: Path, text: ZipfText, mtype: str) -> None:
    """One memory file with a header and paragraphs of realistic size."""
    name = " ".join(text.topic(text.rng.randint(2, 7)))
    desc = " ".join(text.words(text.rng.randint(12, 31)))
    body = text.words(text.body_length())
    paragraphs = "\n\n".join(" ".join(body[i : i + 35]) for i in range(0, len(body), 35))
    path.write_text(
        f"---\nname: {name}\ndescription: {desc}\ntype: {mtype}\n---\n\n{paragraphs}\n",
        encoding="utf-8",
    )


def make_tree(
    root: Path,
    count: int,
    per_dir: int = 200,
    seed: int = 7,
    vocab: list[str] | None = None,
) -> list[Path]:
    """Write ``count`` memory files under ``root`` in folders of ``per_dir``."""
    text = ZipfText(vocab or zipf_vocabulary(), seed)
    files = []
    for i in range(count):
        folder = root / f"project-{i // per_dir:04d}" / "memory"
        if i % per_dir == 0:
            folder.mkdir(parents=True, exist_ok=True)
        mtype = TYPES[i % 4]
        path = folder / f"{mtype}_{'_'.join(text.topic(text.rng.randint(2, 4)))}_{i}.md"
        write_memory(path, text, mtype)
        files.append(path)
    return files
