"""A folder's candidates as the selector builds them: indexed into a real store, then taken
from the folder's manifest, with their bodies put back for the rules that read them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.select.candidates import Candidate
from memoryd.select.manifest import ManifestCache, candidates_for


def indexed_candidates(folder: Path, db: Path, *, analysed: bool = True) -> list[Candidate]:
    """The memories of ``folder`` indexed in ``db``, by name; ``analysed=False``: without their
    analyses, so the ranker works them out from the text."""
    store = IndexStore(db)
    try:
        Syncer(store).sync_tree(str(folder))
        directory = str(folder.resolve())
        manifest = ManifestCache().get(store.conn, directory)
        bodies = dict(
            store.conn.execute("SELECT filename, body FROM files WHERE directory = ?", (directory,))
        )
        return [
            dataclasses.replace(c, body=bodies[c.filename], terms=c.terms if analysed else None)
            for _, c in candidates_for(store.conn, manifest, "")
        ]
    finally:
        store.close()
