"""The speed yardstick: the fastest plain header scan a careful script would write.

Read each memory file of a folder, cut out its frontmatter and parse it with
libyaml's ``CSafeLoader`` (not memoryd's own parser): what an agent without an
index pays to know a folder's memories. Benches time memoryd against it in the
same run.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

if not hasattr(yaml, "CSafeLoader"):
    raise SystemExit("the yardstick needs PyYAML built with libyaml (yaml.CSafeLoader)")
_LOADER: Any = yaml.CSafeLoader


def headers(directory: Path | str) -> Iterator[tuple[os.DirEntry[str], dict[str, Any]]]:
    """Each memory file of ``directory`` (not ``MEMORY.md``) with its parsed frontmatter."""
    with os.scandir(directory) as it:
        for entry in it:
            if not entry.name.endswith(".md") or entry.name == "MEMORY.md":
                continue
            if not entry.is_file():
                continue
            with open(entry.path, "rb") as fh:
                text = fh.read().decode("utf-8", "replace")
            if not text.startswith("---"):
                continue
            end = text.find("\n---", 3)
            if end == -1:
                continue
            try:
                meta = yaml.load(text[3:end], Loader=_LOADER)  # CSafeLoader
            except yaml.YAMLError:
                continue
            if isinstance(meta, dict):
                yield entry, meta


def header_scan(directory: Path | str) -> int:
    """How many memories of ``directory`` have a usable header (the scan's result)."""
    return sum(1 for _ in headers(directory))
