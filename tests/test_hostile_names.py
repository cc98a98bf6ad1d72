"""Names that are not UTF-8 or hold control characters, and symlinks that leave their root.

Such a file becomes an error entry with an escaped, readable name; everything
else is indexed and served, at start-up (where it used to crash the daemon in
a loop) and at run time (where it used to turn the folder's answers into
``internal``). Lone surrogates in request params are param errors.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from conftest import MakeMemory
from daemon_fixtures import DaemonProc, raw_exchange, wait_until, write_memory
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.indexer import queries
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.paths import escaped, name_problem

HEADER = b"---\ndescription: a memory with a hostile name\n---\nbody\n"


def plant_bad_names(root: Path) -> dict[bytes, str]:
    """Files whose names SQLite and JSON cannot carry as they are -> their escaped path."""
    base = os.fsencode(root)
    names = {
        b"bad_\xff\xfe.md": "bad_\\xff\\xfe.md",
        b"new\nline.md": "new\\nline.md",
        b"\x1b[31mred.md": "\\x1b[31mred.md",
        b"dir_\xff/feedback_inside.md": "dir_\\xff/feedback_inside.md",
    }
    os.mkdir(base + b"/dir_\xff")
    for name in names:
        with open(base + b"/" + name, "wb") as fh:
            fh.write(HEADER)
    return {base + b"/" + k: f"{root}/{v}" for k, v in names.items()}


def errors_by_path(store: IndexStore, root: Path) -> dict[str, str]:
    return {e["path"]: e["error"] for e in queries.errors_under(store.conn, str(root))}


def test_escaped_names_are_readable_and_plain_names_untouched() -> None:
    assert escaped("/m/feedback_café.md") == "/m/feedback_café.md"
    assert name_problem("/m/feedback_café.md") is None
    assert escaped(os.fsdecode(b"/m/a\xff.md")) == "/m/a\\xff.md"
    assert escaped("/m/a\nb\u2028.md") == "/m/a\\nb\\u2028.md"
    assert escaped("lone \ud800") == "lone \\ud800"  # any lone surrogate, not only fsdecode's


def test_bad_names_become_error_entries_and_the_rest_is_indexed(
    store: IndexStore, memdir: Path, make_memory: MakeMemory
) -> None:
    make_memory("feedback_fine.md")
    planted = plant_bad_names(memdir)
    result = Syncer(store).sync_tree(str(memdir))
    assert result.added == 5
    errors = errors_by_path(store, memdir)
    assert set(errors) == set(planted.values())
    assert all("shown escaped" in reason for reason in errors.values())
    names = [f.filename for f in queries.memories_in(store.conn, str(memdir))]
    assert names == ["feedback_fine.md"]
    before = store.conn.total_changes
    again = Syncer(store).sync_tree(str(memdir))
    assert (again.changed, store.conn.total_changes - before) == (0, 0)  # nothing rewritten
    os.unlink(next(p for p in planted if p.endswith(b"bad_\xff\xfe.md")))
    Syncer(store).sync_path(os.fsdecode(os.fsencode(memdir) + b"/bad_\xff\xfe.md"))
    assert f"{memdir}/bad_\\xff\\xfe.md" not in errors_by_path(store, memdir)


FIRST_INDEX_FILES = 200


def test_bad_names_in_a_first_bulk_index(store: IndexStore, memdir: Path) -> None:
    for i in range(FIRST_INDEX_FILES):
        (memdir / f"feedback_{i}.md").write_bytes(HEADER)
    planted = plant_bad_names(memdir)
    Syncer(store).sync_tree(str(memdir))
    assert set(errors_by_path(store, memdir)) == set(planted.values())
    assert len(queries.memories_in(store.conn, str(memdir))) == FIRST_INDEX_FILES


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.binary(min_size=1, max_size=12), min_size=1, max_size=6, unique=True))
def test_any_bytes_in_file_names_index_without_raising(names: list[bytes]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "memory")
        os.mkdir(root)
        made = set()
        for raw in names:
            name = raw.replace(b"/", b"_").replace(b"\x00", b"_").lstrip(b".#~") + b".md"
            if name in made or name == b".md":
                continue
            made.add(name)
            with open(os.fsencode(root) + b"/" + name, "wb") as fh:
                fh.write(HEADER)
        store = IndexStore(Path(tmp) / "index.db")
        try:
            Syncer(store).sync_tree(root)
            rows = store.conn.execute("SELECT path FROM files").fetchall()
            assert len(rows) == len(made)
            for (path,) in rows:
                path.encode()  # storable and printable as it is
                assert name_problem(path) is None
        finally:
            store.close()


def test_a_symlink_leaving_the_root_is_an_error_entry_one_inside_is_followed(
    store: IndexStore, tmp_path: Path, memdir: Path, make_memory: MakeMemory
) -> None:
    outside = write_memory(tmp_path / "elsewhere" / "feedback_secret.md", "outside the root")
    inside = make_memory("feedback_real.md", "inside the root")
    (memdir / "feedback_out.md").symlink_to(outside)
    (memdir / "feedback_etc.md").symlink_to("/etc/passwd")
    (memdir / "feedback_in.md").symlink_to(inside.name)
    Syncer(store).sync_tree(str(memdir))
    errors = errors_by_path(store, memdir)
    assert errors[f"{memdir}/feedback_out.md"].startswith("symlink points outside the root")
    assert "'/etc/passwd'" in errors[f"{memdir}/feedback_etc.md"]
    names = {f.filename for f in queries.memories_in(store.conn, str(memdir))}
    assert names == {"feedback_real.md", "feedback_in.md"}
    # The watcher's path: the same rule, with the root named by the daemon.
    (memdir / "feedback_late.md").symlink_to(outside)
    Syncer(store, root_of=lambda p: str(memdir)).sync_path(str(memdir / "feedback_late.md"))
    assert "feedback_late.md" not in {
        f.filename for f in queries.memories_in(store.conn, str(memdir))
    }


# -- a real daemon -----------------------------------------------------------------


def test_a_daemon_starts_serves_and_watches_over_bad_names(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    root = tmp_path / "memory"
    write_memory(root / "feedback_pytest.md", "run pytest with -n 4 for the suite")
    planted = plant_bad_names(root)
    d = make_daemon(roots=[root])  # used to crash here, at every start
    listing = d.call("list", {"dir": str(root)})
    assert {e["path"] for e in listing["errors"]} == set(planted.values())
    picked = d.call("select", {"query": "how do I run pytest", "dir": str(root)})
    assert [s["filename"] for s in picked["selected"]] == ["feedback_pytest.md"]
    # At run time: a new bad name arrives through the watcher.
    with open(os.fsencode(root) + b"/late_\xc3\x28.md", "wb") as fh:
        fh.write(HEADER)

    def late_listed() -> bool:
        errors = d.call("list", {"dir": str(root)})["errors"]
        return f"{root}/late_\\xc3(.md" in {e["path"] for e in errors}

    wait_until(late_listed, 10, "the late bad name listed")
    assert d.call("reindex", {"dir": str(root)})["dirs"] == [str(root)]
    assert d.call("watch", {"dir": str(root)})["root"] == str(root)
    status = d.call("status")
    assert status["roots"][0]["errors"] == len(planted) + 1
    assert "internal" not in d.log()


def test_lone_surrogates_in_params_are_param_errors(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    d = make_daemon()
    root = str(d.roots[0])
    link = tmp_path / "link"
    os.symlink(os.fsencode(tmp_path) + b"/dir_\xff", os.fsencode(link))
    os.mkdir(os.fsencode(tmp_path) + b"/dir_\xff")
    answers = raw_exchange(
        d,
        [
            rb'{"id":1,"method":"select","params":{"query":"a\ud800b","dir":"%s"}}' % root.encode(),
            rb'{"id":2,"method":"list","params":{"dir":"\udcff"}}',
            rb'{"id":"\udcff","method":"status"}',
            rb'{"id":4,"method":"st\ud800","params":{}}',
            rb'{"id":5,"method":"list","params":{"dir":"%s"}}' % str(link).encode(),
            rb'{"id":6,"method":"status"}',
        ],
    )
    codes = [a["error"]["code"] if "error" in a else "ok" for a in answers]  # type: ignore[index]
    assert codes == [
        "invalid_params",
        "invalid_params",
        "invalid_request",
        "invalid_request",
        "invalid_params",
        "ok",
    ]
    assert answers[0]["error"]["data"]["field"] == "query"  # type: ignore[index]
    assert "not valid UTF-8" in answers[4]["error"]["message"]  # type: ignore[index]
    assert "internal" not in d.log()
