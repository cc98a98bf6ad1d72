"""One bad file never stops memoryd: every failure is that file's entry, per file, everywhere.

Header values YAML cannot build (impossible dates, numbers of thousands of
digits, tags the value does not fit) stay text; any exception still left
while parsing or indexing one file becomes that file's error. Checked where
files are read: the parser, the writer's batches and reconciles, a real
daemon's start-up, ``reindex``, the CLI, sessions (load, brief,
save), and ``status`` after a reconcile failed. A header of plain ``key:
value`` lines that strict YAML rejects is read leniently, with a warning.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from daemon_fixtures import DaemonProc, composed, daemon_env

from memoryd._unicode_words import unspaced_grams
from memoryd.cli.daemon import render_status
from memoryd.config import Config
from memoryd.errors import InvalidParams
from memoryd.indexer import parse as parse_mod
from memoryd.indexer import records as records_mod
from memoryd.indexer.frontmatter import load_mapping
from memoryd.indexer.parse import MEMORY_HEADER_KEYS, parse_bytes
from memoryd.indexer.records import KIND_MEMORY, KIND_SESSION
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.methods import Save
from memoryd.params import decode
from memoryd.sessions import _sections
from memoryd.sessions import brief as brief_mod
from memoryd.sessions import files as files_mod
from memoryd.sessions.files import load_last
from memoryd.staleness.render import render_check

BAD_VALUES = {
    "feb30": "created: 2025-02-30",
    "month13": "created: 2025-13-01",
    "hour25": "updated: 2025-01-01 25:00:00",
    "digits": "count: " + "7" * 5000,
    "int_tag": "created: !!int abc",
    "bool_tag": "reviewed: !!bool maybe",
    "timestamp_tag": "created: !!timestamp x",
}
"""Header lines whose values PyYAML's safe loader raises on (ValueError, KeyError, ...)."""

SESSION_NAME = "2025-06-01-10-00-proj.md"


def memory_text(extra: str, description: str = "a memory about deploys") -> str:
    return f"---\nname: m\ndescription: {description}\ntype: project\n{extra}\n---\nbody\n"


def session_text(extra: str) -> str:
    return (
        f"---\nschema_version: 1.1\nproject-name: proj\nsession: 2025-06-01-10-00\n"
        f"status: in-progress\n{extra}\n---\n# proj\n\n## Session summary\nWorked on deploys.\n"
    )


def bad_folder(root: Path) -> Path:
    """A folder with one memory per bad value, good memories, and a bad-dated session."""
    root.mkdir(parents=True, exist_ok=True)
    for label, line in BAD_VALUES.items():
        (root / f"a_{label}.md").write_text(memory_text(line))
    (root / "b_type_tag.md").write_text(memory_text("").replace("type: project", "type: !!bool x"))
    (root / "b_broken.md").write_text("---\ndescription: [unclosed\n---\n")
    for name in ("z_good_one.md", "z_good_two.md"):
        (root / name).write_text(memory_text("", "deploy with the blue-green script"))
    (root / SESSION_NAME).write_text(session_text("last_session_at: 2025-02-30T10:00:00"))
    return root


# -- the parser ---------------------------------------------------------------------


@pytest.mark.parametrize("line", BAD_VALUES.values(), ids=BAD_VALUES.keys())
@pytest.mark.parametrize("kind", [KIND_MEMORY, KIND_SESSION])
def test_a_value_yaml_cannot_build_stays_text(line: str, kind: str) -> None:
    text = memory_text(line) if kind == KIND_MEMORY else session_text(line)
    parsed = parse_bytes(text.encode(), kind)
    assert parsed.error is None
    json.dumps(parsed.meta)  # JSON as it is, whatever the tag said
    key, _, value = line.partition(": ")
    if kind == KIND_MEMORY and key in MEMORY_HEADER_KEYS:
        text = value.split(" ", 1)[1] if value.startswith("!!") else value
        assert parsed.meta["header"][key] == text  # the text, without the tag


def test_a_header_loads_as_strict_json_values() -> None:
    header = (
        "a: .inf\nb: -.nan\nc: !!set {x: 1}\nd: !!binary aGk=\ne: !!omap [k: 1]\n"
        "f: 2025-01-02\ng: 2025-01-02 10:00:00+02:00\nh: 12\ni: yes"
    )
    fields = load_mapping(header)
    json.dumps(fields, allow_nan=False)  # no datetime, set, bytes, tuple, inf or nan
    assert (fields["a"], fields["f"], fields["h"], fields["i"]) == (".inf", "2025-01-02", 12, True)


def test_any_exception_parsing_a_file_is_its_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: object) -> None:
        raise RuntimeError("a bug nobody foresaw, near ghp_" + "a" * 36)

    monkeypatch.setattr(parse_mod, "_memory", boom)
    parsed = parse_bytes(memory_text("").encode(), KIND_MEMORY)
    assert parsed.error is not None and parsed.error.startswith("could not parse the file")
    assert "RuntimeError: a bug nobody foresaw" in parsed.error
    assert "ghp_" not in parsed.error  # the exception's text is redacted


def test_a_row_that_cannot_be_built_is_an_error_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "mem"
    folder.mkdir()
    for name in ("a.md", "b_poison.md", "c.md"):
        (folder / name).write_text(memory_text(""))

    def grams(*texts: str) -> str | None:
        if texts[0] == "b_poison.md":  # the filename
            raise ValueError("the analyser cannot handle this one")
        return unspaced_grams(*texts)

    monkeypatch.setattr(records_mod, "unspaced_grams", grams)
    store = IndexStore(tmp_path / "index.db")
    try:
        for _ in range(2):  # the first index (bulk load), then a reconcile with changes
            Syncer(store).sync_tree(str(folder))
            for name in ("a.md", "b_poison.md", "c.md"):
                (folder / name).write_text(memory_text("", f"changed {name}"))
        rows = dict(store.conn.execute("SELECT filename, error FROM files").fetchall())
    finally:
        store.close()
    assert rows["a.md"] is None and rows["c.md"] is None
    assert "could not index the file (ValueError: the analyser" in rows["b_poison.md"]


# -- lenient headers ------------------------------------------------------------------


def test_a_header_of_plain_lines_with_a_colon_is_read_with_a_warning() -> None:
    text = (
        "---\nname: lap view\ndescription: Fixed: the lap view shows 0 laps\n"
        "metadata:\n  type: feedback\n  originSessionId: abc\n---\nbody\n"
    )
    parsed = parse_bytes(text.encode(), KIND_MEMORY)
    assert parsed.error is None
    assert (parsed.description, parsed.type) == ("Fixed: the lap view shows 0 laps", "feedback")
    assert parsed.warning is not None and "plain 'key: value' lines" in parsed.warning


@pytest.mark.parametrize(
    "header",
    [
        "description: Fixed: x\n- an item",  # a list item is not a key: value line
        "description: 'Fixed: x",  # a value opening a quote meant YAML
        "  description: Fixed: x",  # indented with nothing to nest under
    ],
)
def test_a_header_that_is_neither_yaml_nor_plain_lines_stays_an_error(header: str) -> None:
    parsed = parse_bytes(f"---\n{header}\n---\nbody\n".encode(), KIND_MEMORY)
    assert parsed.error is not None and parsed.warning is None


def test_nested_metadata_in_strict_yaml_has_no_warning() -> None:
    text = "---\nname: n\ndescription: d\nmetadata:\n  type: user\n---\nbody\n"
    parsed = parse_bytes(text.encode(), KIND_MEMORY)
    assert (parsed.error, parsed.warning, parsed.type) == (None, None, "user")


# -- the daemon -------------------------------------------------------------------------


def test_a_daemon_on_bad_files_starts_serves_and_lists_them(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    root = bad_folder(tmp_path / "memory")
    (root / "c_lenient.md").write_text("---\ndescription: Fixed: the lap view\n---\nbody\n")
    d = make_daemon(roots=[root])  # exits 1 at start when one file raises
    status = d.call("status")
    assert status["state"] == "ready" and "last_reconcile_error" not in status
    listing = d.call("list", {"dir": str(root)})
    files = {f["filename"]: f for f in listing["files"]}
    errors = {Path(e["path"]).name: e["error"] for e in listing["errors"]}
    assert {f"a_{label}.md" for label in BAD_VALUES} <= files.keys()
    assert {"z_good_one.md", "z_good_two.md", SESSION_NAME} <= files.keys()
    assert "invalid type 'x'" in errors["b_type_tag.md"]
    assert "YAML syntax error" in errors["b_broken.md"]
    assert "plain 'key: value' lines" in files["c_lenient.md"]["warning"]
    check = d.call("check", {"dir": str(root)})
    assert [Path(w["path"]).name for w in check["warnings"]] == ["c_lenient.md"]
    assert f"warning: {root / 'c_lenient.md'}: header read as plain" in render_check(check)
    reindexed = d.call("reindex", {})  # answered `internal` when one file raised
    assert {Path(e["path"]).name for e in reindexed["errors"]} == {"b_type_tag.md", "b_broken.md"}
    picked = d.call("select", {"dir": str(root), "query": "blue-green deploy script"})
    assert {s["filename"] for s in picked["selected"]} & {"z_good_one.md", "z_good_two.md"}


def test_a_session_with_bad_dates_loads_briefs_and_is_saved_over(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    root = tmp_path / "memory"
    root.mkdir()
    (root / SESSION_NAME).write_text(
        session_text("last_session_at: 2025-02-30T25:00:00\nlast-checkpoint: !!int abc")
    )
    d = make_daemon(roots=[root])
    loaded = d.call("load_last", {"dir": str(root), "project": "proj"})
    assert loaded["found"] is True and loaded["fields"]["last-checkpoint"] == "abc"
    brief = d.call("context", {"dir": str(root), "task": "deploys", "project": "proj"})
    assert brief["sessions_searched"] == 1
    saved = d.call(
        "save",
        {
            "dir": str(root),
            "project": "proj",
            "session": "2025-06-01-10-00",
            "session_summary": "Kept on with deploys.",
        },
    )
    assert saved["created"] is False
    again = d.call("load_last", {"dir": str(root), "project": "proj"})
    assert "Kept on with deploys." in again["content"]


# -- the writer's batches and reconciles, in process ----------------------------------


def cfg_for(tmp_path: Path, root: Path) -> Config:
    return Config(
        socket=tmp_path / "s.sock", state_dir=tmp_path, db=tmp_path / "index.db", roots=(str(root),)
    )


def indexed(parts: Any, root: Path) -> dict[str, str | None]:
    rows = parts.writer.call(
        lambda s: s.conn.execute(
            "SELECT filename, error FROM files WHERE directory = ?", (str(root),)
        ).fetchall()
    )
    return dict(rows)


def test_a_watcher_batch_indexes_the_files_after_a_bad_one(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    root.mkdir()
    with composed(cfg_for(tmp_path, root)) as parts:
        parts.maintenance.reconcile("startup")
        bad_folder(root)
        paths = {str(p) for p in root.iterdir()}
        parts.watcher.on_paths(paths, set())
        found = indexed(parts, root)  # the writer runs jobs in order: the batch is done
    assert found.keys() == {Path(p).name for p in paths}
    assert found["z_good_one.md"] is None and found["z_good_two.md"] is None


def test_a_path_that_fails_does_not_stop_the_rest_of_its_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "memory"
    root.mkdir()
    sync_path = Syncer.sync_path

    def failing(self: Syncer, path: str) -> object:
        if path.endswith("a_first.md"):
            raise RuntimeError("a bug in one path's sync")
        return sync_path(self, path)

    monkeypatch.setattr(Syncer, "sync_path", failing)
    with composed(cfg_for(tmp_path, root)) as parts:
        parts.maintenance.reconcile("startup")
        for name in ("a_first.md", "b.md", "c.md"):
            (root / name).write_text(memory_text(""))
        parts.watcher.on_paths({str(p) for p in root.iterdir()}, set())
        found = indexed(parts, root)
    assert found == {"b.md": None, "c.md": None}


def test_a_failed_reconcile_shows_in_status_and_does_not_raise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "memory"
    root.mkdir()

    def broken(self: Syncer, roots: list[str]) -> object:
        raise RuntimeError("a reconcile bug")

    with composed(cfg_for(tmp_path, root)) as parts:
        status = parts.handlers["status"]
        assert "last_reconcile_error" not in status({})
        monkeypatch.setattr(Syncer, "sync_trees", broken)
        assert parts.maintenance.reconcile_quietly("scheduled") is None
        reply = status({})
    failed = reply["last_reconcile_error"]
    assert failed["reason"] == "scheduled" and "RuntimeError: a reconcile bug" in failed["error"]
    assert failed["at"].endswith("Z")
    shown = render_status(reply)  # `memoryd status`
    assert f"reconcile failed: {failed['at']} (scheduled): RuntimeError: a reconcile bug" in shown


# -- the CLI, with the daemon it starts ---------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["index", "{root}"],
        ["list", "{root}"],
        ["select", "blue-green deploy script", "--dir", "{root}"],
    ],
    ids=["index", "list", "select"],
)
def test_the_cli_and_the_daemon_it_starts_print_no_traceback(
    tmp_path: Path, argv: list[str]
) -> None:
    root = bad_folder(tmp_path / "memory")
    (root / "c_lenient.md").write_text("---\ndescription: Fixed: the lap view\n---\nbody\n")
    env = daemon_env(tmp_path / "home")
    env["MEMORYD_SOCKET"] = str(tmp_path / "no-daemon.sock")
    args = [a.format(root=root) for a in argv] + ["--db", str(tmp_path / "index.db")]
    done = subprocess.run(
        [sys.executable, "-m", "memoryd", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    logs = list(tmp_path.rglob("daemon.log"))  # the started daemon's, below its state dir
    assert logs and all("Traceback" not in log.read_text() for log in logs)
    if argv[0] == "list":
        assert "z_good_one.md" in done.stdout and "b_broken.md" in done.stdout
        assert "    warning: header read as plain 'key: value' lines" in done.stdout
    if argv[0] == "select":
        assert "z_good_" in done.stdout


# -- sessions in process ------------------------------------------------------------------


def indexed_sessions(tmp_path: Path, texts: dict[str, str]) -> tuple[IndexStore, Path]:
    folder = tmp_path / "sessions"
    folder.mkdir()
    for name, text in texts.items():
        (folder / name).write_text(text)
    store = IndexStore(tmp_path / "index.db")
    Syncer(store).sync_tree(str(folder))
    return store, folder


def test_a_session_time_local_time_cannot_show_is_unknown_not_a_crash(tmp_path: Path) -> None:
    store, folder = indexed_sessions(
        tmp_path, {SESSION_NAME: session_text("last_session_at: 0001-01-01T00:00:00")}
    )
    try:
        found = load_last(store.conn, str(folder), "proj")
    finally:
        store.close()
    assert found["found"] is True and "Resuming `proj`" in found["resume_line"]


def test_one_session_that_fails_is_skipped_and_the_next_one_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    newer = "2025-06-02-10-00-proj.md"
    store, folder = indexed_sessions(
        tmp_path, {SESSION_NAME: session_text(""), newer: session_text("")}
    )
    real = _sections.resume_line

    def failing(project: str, meta: Any, now: Any, *, filename: str | None = None) -> Any:
        if filename == newer:
            raise RuntimeError("a resume bug")
        return real(project, meta, now, filename=filename)

    monkeypatch.setattr(files_mod, "resume_line", failing)
    monkeypatch.setattr(brief_mod, "parse_sections", lambda text: 1 / 0)  # every brief doc fails
    try:
        found = load_last(store.conn, str(folder), "proj")
        brief = files_mod.context(store.conn, [str(folder)], "deploys", "proj", 300)
    finally:
        store.close()
    assert found["found"] is True and found["filename"] == SESSION_NAME
    assert "RuntimeError: a resume bug" in found["skipped"][0]["reason"]
    assert {s["filename"] for s in brief["skipped"]} == {SESSION_NAME, newer}
    assert "ZeroDivisionError" in brief["skipped"][0]["error"]


def test_a_save_with_a_session_local_time_cannot_show_is_refused_as_invalid() -> None:
    with pytest.raises(InvalidParams, match="not a real date and time"):
        files_mod.save_request(
            decode(Save, {"dir": "/tmp", "project": "proj", "session": "0001-01-01-00-00"})
        )
