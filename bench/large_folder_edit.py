"""What the first ``select`` of a large folder costs, built and after each edit.

A large folder's posting lists are built on its first query and patched after
a change (only the changed memories are read again). This bench indexes one
Zipf folder of ``--files`` memories (bench/_corpus.py), builds its manifest
(the first query's cost), then ``--edits`` times appends a line to one memory,
re-syncs the index and gets the manifest again (the next query's cost), and
prints each time with the load average. In-process, no daemon.

Usage: .venv/bin/python bench/large_folder_edit.py [--files 10000] [--edits 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from _corpus import make_tree

from memoryd import logs
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.select.analysis import TERM_ANALYSIS
from memoryd.select.manifest import ManifestCache


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--edits", type=int, default=3)
    args = parser.parse_args(argv)
    logs.configure(level="WARNING")
    with tempfile.TemporaryDirectory() as tmp:
        make_tree(Path(tmp) / "tree", args.files, per_dir=args.files)
        folder = Path(tmp) / "tree" / "project-0000" / "memory"
        store = IndexStore(Path(tmp) / "index.db", TERM_ANALYSIS)
        Syncer(store).sync_tree(str(folder))
        cache = ManifestCache()
        started = time.perf_counter()
        cache.get(store.conn, str(folder))
        print(f"{args.files} files, first build: {(time.perf_counter() - started) * 1000:.0f} ms")
        for n, path in enumerate(sorted(folder.glob("*.md"))[100 : 100 + args.edits]):
            with path.open("a", encoding="utf-8") as out:
                out.write(f"\nedited {n}: okapi\n")
            Syncer(store).sync_tree(str(folder))
            started = time.perf_counter()
            manifest = cache.get(store.conn, str(folder))
            spent = (time.perf_counter() - started) * 1000
            dead = len(manifest.postings.dead) if manifest.postings is not None else 0
            print(f"after edit {n + 1}: {spent:.0f} ms ({dead} dead entries in the lists)")
        store.close()
    print(f"loadavg {Path('/proc/loadavg').read_text().split()[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
