"""Verdicts against real git repositories, the checkout resolution order, and ``memoryd check``."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import MakeMemory
from git_repo import DAY, T0, Repo

from memoryd import cli
from memoryd.indexer.store import IndexStore
from memoryd.indexer.sync import Syncer
from memoryd.staleness import results
from memoryd.staleness.checks import (
    Checker,
    FolderCheck,
    check_tree,
    decode_folder_name,
    encode,
    resolve,
)
from memoryd.staleness.render import caution, render_check


def _write(store: IndexStore) -> Callable[[Callable[[sqlite3.Connection], None]], None]:
    def write(fn: Callable[[sqlite3.Connection], None]) -> None:
        with store.transaction() as conn:
            fn(conn)

    return write


def _memory(make: MakeMemory, filename: str, body: str) -> Path:
    path = make(filename, body=body)
    os.utime(path, (T0, T0))
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    """src/billing/tax.py, src/app.py, src/old.py and scripts/deploy.sh, committed before T0."""
    r = Repo(tmp_path / "checkout")
    for rel in ("src/billing/tax.py", "src/app.py", "src/old.py", "scripts/deploy.sh"):
        r.write(rel)
    r.write(".gitignore", "build/\n/src/gen/\n")
    r.commit("initial", when=T0 - 10 * DAY)
    return r


def check(store: IndexStore, memdir: Path, checker: Checker, **kw: Any) -> FolderCheck:
    Syncer(store).sync_tree(str(memdir))
    return checker.check_dir(store.conn, str(memdir), _write(store), **kw)


def verdict_of(result: FolderCheck, filename: str) -> Any:
    return next(m["staleness"] for m in result["memories"] if m["filename"] == filename)


def test_missing_renamed_changed_and_intact(
    store: IndexStore, memdir: Path, make_memory: MakeMemory, repo: Repo
) -> None:
    _memory(make_memory, "project_tax.md", "Rates live in `src/billing/tax.py`.")
    _memory(make_memory, "project_old.md", "The legacy path is src/old.py.")
    _memory(make_memory, "project_app.md", "Entry point: `src/app.py:12`.")
    _memory(make_memory, "project_deploy.md", "Deploy with scripts/deploy.sh.")
    repo.git("mv", "src/billing/tax.py", "src/billing/taxes.py")
    repo.commit("rename tax", when=T0 + DAY)
    repo.git("rm", "-q", "src/old.py")
    repo.commit("drop old", when=T0 + 2 * DAY)
    for n in (3, 4):
        repo.write("src/app.py", f"v{n}\n")
        repo.commit(f"app v{n}", when=T0 + n * DAY)
    checker = Checker({str(memdir): str(repo.path)})

    result = check(store, memdir, checker)

    assert result["checkout"] == {"path": str(repo.path), "source": "config", "reason": None}
    assert result["mode"] == "git"
    tax = verdict_of(result, "project_tax.md")
    assert tax["renamed"] == {"src/billing/tax.py": "src/billing/taxes.py"}
    assert tax["missing"] == [] and tax["all_gone"] and tax["stale"]
    old = verdict_of(result, "project_old.md")
    assert old["missing"] == ["src/old.py"] and old["all_gone"]
    app = verdict_of(result, "project_app.md")
    assert app["changed_since"] == [
        {"path": "src/app.py", "commits": 2, "newest": "2023-11-18T22:13:20Z"}
    ]
    assert not app["all_gone"] and app["stale"]
    deploy = verdict_of(result, "project_deploy.md")
    assert deploy == {**deploy, "missing": [], "renamed": {}, "changed_since": [], "stale": False}
    assert result["stale"] == 3


def test_commits_before_the_memory_was_written_do_not_count(
    store: IndexStore, memdir: Path, make_memory: MakeMemory, repo: Repo
) -> None:
    repo.write("src/app.py", "older change\n")
    repo.commit("before the memory", when=T0 - DAY)
    _memory(make_memory, "project_app.md", "Entry point: `src/app.py`.")
    result = check(store, memdir, Checker({str(memdir): str(repo.path)}))
    assert verdict_of(result, "project_app.md")["stale"] is False


def test_ignored_build_output_is_not_judged_and_untracked_files_exist(
    store: IndexStore, memdir: Path, make_memory: MakeMemory, repo: Repo
) -> None:
    repo.write("src/new_module.py")  # not committed yet, but present
    _memory(make_memory, "project_build.md", "Reports go to build/report/index.html.")
    _memory(make_memory, "project_new.md", "New code in src/new_module.py.")
    result = check(store, memdir, Checker({str(memdir): str(repo.path)}))
    assert verdict_of(result, "project_build.md")["cited"] == 0
    assert verdict_of(result, "project_build.md")["stale"] is False
    assert verdict_of(result, "project_new.md")["stale"] is False


def test_a_renamed_directory_reports_its_new_place(
    store: IndexStore, memdir: Path, make_memory: MakeMemory, repo: Repo
) -> None:
    _memory(make_memory, "project_billing.md", "All of `src/billing/` is money code.")
    repo.git("mv", "src/billing", "src/money")
    repo.commit("move billing", when=T0 + DAY)
    result = check(store, memdir, Checker({str(memdir): str(repo.path)}))
    assert verdict_of(result, "project_billing.md")["renamed"] == {"src/billing": "src/money"}


def test_verdicts_are_cached_per_content_hash_and_head(
    store: IndexStore, memdir: Path, make_memory: MakeMemory, repo: Repo
) -> None:
    _memory(make_memory, "project_app.md", "Entry point: `src/app.py`.")
    _memory(make_memory, "project_old.md", "Legacy: src/old.py.")
    checker = Checker({str(memdir): str(repo.path)})
    assert check(store, memdir, checker)["rechecked"] == 2
    assert check(store, memdir, checker)["rechecked"] == 0

    _memory(make_memory, "project_app.md", "Entry point: `src/app.py`, see also src/old.py.")
    assert check(store, memdir, checker)["rechecked"] == 1

    repo.git("rm", "-q", "src/old.py")
    repo.commit("drop old", when=T0 + DAY)
    result = check(store, memdir, checker)
    assert result["rechecked"] == 2
    assert verdict_of(result, "project_old.md")["missing"] == ["src/old.py"]
    # The same answer as a checker that reads the whole history from scratch.
    fresh = check(store, memdir, Checker({str(memdir): str(repo.path)}), force=True)
    assert fresh["memories"] == result["memories"]


def test_a_checkout_inside_a_repository_is_checked_from_the_repository_top(
    store: IndexStore, memdir: Path, make_memory: MakeMemory, repo: Repo
) -> None:
    _memory(make_memory, "project_old.md", "Legacy: src/old.py; generated: src/gen/out.py.")
    repo.git("rm", "-q", "src/old.py")
    repo.commit("drop old", when=T0 + DAY)
    result = check(store, memdir, Checker({str(memdir): str(repo.path / "src")}))
    assert result["mode"] == f"git, from the top of the repository {repo.path}"
    verdict = verdict_of(result, "project_old.md")
    assert verdict["checkout"] == str(repo.path) and verdict["missing"] == ["src/old.py"]
    assert verdict["cited"] == 1  # src/gen/ is ignored from the top: build output


def test_a_directory_that_is_not_a_git_repository_is_checked_on_disk(
    store: IndexStore, memdir: Path, make_memory: MakeMemory, tmp_path: Path
) -> None:
    plain = tmp_path / "plain"
    (plain / "src").mkdir(parents=True)
    (plain / "src" / "here.py").write_text("x")
    _memory(make_memory, "project_x.md", "See src/here.py and src/gone.py.")
    checker = Checker({str(memdir): str(plain)})
    result = check(store, memdir, checker)
    assert result["mode"] == "not a git repository: file system only"
    verdict = verdict_of(result, "project_x.md")
    assert verdict["missing"] == ["src/gone.py"] and not verdict["all_gone"]
    # Without git nothing says the path ever existed: no "no longer exists".
    assert caution(verdict) == (
        f"Caution: cites `src/gone.py`, not found in {plain} (not a git checkout)."
    )
    # No HEAD to notice a change by: every pass looks at the disk again.
    (plain / "src" / "here.py").unlink()
    verdict = verdict_of(check(store, memdir, checker), "project_x.md")
    assert verdict["missing"] == ["src/here.py", "src/gone.py"] and verdict["all_gone"]


def test_a_checkout_guessed_from_the_folder_name_is_named_a_guess(
    store: IndexStore, make_memory: MakeMemory, tmp_path: Path, repo: Repo
) -> None:
    plain = tmp_path / "src" / "shop"
    (plain / "src").mkdir(parents=True)
    memdir = tmp_path / "claude" / "projects" / encode(str(plain)) / "memory"
    memdir.mkdir(parents=True)
    make_memory("project_x.md", body="See src/gone.py.", directory=memdir)
    checker = Checker()
    result = check_tree(checker, _synced(store, memdir), str(memdir), _write(store))
    verdict = result["memories"][0]["staleness"]
    assert verdict is not None
    assert verdict["checkout_guessed"] is True and verdict["head"] is None
    expected = (
        f"cites `src/gone.py`, not found in {plain} "
        "(guessed from the folder name; not a git checkout)"
    )
    assert caution(verdict) == f"Caution: {expected}."
    assert render_check(result).splitlines() == [
        f"{memdir}: checkout {plain} (guessed from the folder name; "
        "not a git repository: file system only)",
        f"  project_x.md: {expected}",
        "1 of 1 memories citing code are stale.",
    ]
    # A guessed checkout that is a git repository: still named as a guess.
    guessed_repo = tmp_path / "claude" / "projects" / encode(str(repo.path)) / "memory"
    guessed_repo.mkdir(parents=True)
    make_memory("project_y.md", body="See src/never.py.", directory=guessed_repo)
    found = check(store, guessed_repo, checker)
    assert caution(verdict_of(found, "project_y.md")) == (
        f"Caution: cites `src/never.py`, not found in {repo.path} (guessed from the folder name)."
    )


def _synced(store: IndexStore, memdir: Path) -> sqlite3.Connection:
    Syncer(store).sync_tree(str(memdir))
    return store.conn


@pytest.mark.parametrize("broken", ["absent", "file", "corrupt-git"])
def test_a_broken_or_absent_checkout_gives_a_reason_not_an_error(
    store: IndexStore, memdir: Path, make_memory: MakeMemory, repo: Repo, broken: str
) -> None:
    _memory(make_memory, "project_app.md", "Entry point: `src/app.py`.")
    target = repo.path
    if broken == "absent":
        target = repo.path.parent / "nowhere"
    elif broken == "file":
        target = repo.path / "src" / "app.py"
    else:
        (repo.path / ".git" / "HEAD").write_text("garbage\n")
    result = check(store, memdir, Checker({str(memdir): str(target)}))
    if broken == "corrupt-git":
        assert result["mode"] == "not a git repository: file system only"
        assert verdict_of(result, "project_app.md")["stale"] is False
    else:
        assert result["checkout"]["path"] is None
        assert "is not a directory" in str(result["checkout"]["reason"])
        assert verdict_of(result, "project_app.md") is None


def test_resolution_order_config_hook_transcript_folder_name(
    store: IndexStore, tmp_path: Path
) -> None:
    code = tmp_path / "src" / "my.app"
    (code / "sub").mkdir(parents=True)
    other, hinted, logged = tmp_path / "other", tmp_path / "hinted", tmp_path / "logged"
    for place in (other, hinted, logged):
        place.mkdir()
    project = tmp_path / "claude" / "projects" / encode(str(code))
    memdir = project / "memory"
    memdir.mkdir(parents=True)
    conn = store.conn
    d = str(memdir)

    found = resolve(d, {}, conn)
    assert (found["path"], found["source"]) == (str(code), "folder-name")

    (project / "a.jsonl").write_text(
        '{"type": "summary"}\nnot json\n' + json.dumps({"cwd": str(logged), "type": "user"}) + "\n"
    )
    assert resolve(d, {}, conn)["source"] == "transcript"
    assert resolve(d, {}, conn)["path"] == str(logged)

    with store.transaction() as c:
        results.remember_cwd(c, d, str(hinted))
    assert (resolve(d, {}, conn)["path"], resolve(d, {}, conn)["source"]) == (str(hinted), "hook")

    found = resolve(d, {d: str(other)}, conn)
    assert (found["path"], found["source"]) == (str(other), "config")


def test_folder_names_that_decode_ambiguously_or_not_at_all_say_so(
    store: IndexStore, tmp_path: Path
) -> None:
    (tmp_path / "a-b").mkdir()
    (tmp_path / "a" / "b").mkdir(parents=True)
    name = encode(str(tmp_path / "a-b"))
    assert decode_folder_name(name) == sorted([str(tmp_path / "a-b"), str(tmp_path / "a/b")])
    memdir = tmp_path / "projects" / name / "memory"
    memdir.mkdir(parents=True)
    found = resolve(str(memdir), {}, store.conn)
    assert found["path"] is None and "matches several paths" in (found["reason"] or "")

    lost = tmp_path / "projects" / "-no-such-place-anywhere" / "memory"
    lost.mkdir(parents=True)
    found = resolve(str(lost), {}, store.conn)
    assert found["path"] is None and "no existing directory matches" in (found["reason"] or "")

    plain = tmp_path / "notes"
    plain.mkdir()
    found = resolve(str(plain), {}, store.conn)
    assert found["path"] is None and "not an encoded project path" in (found["reason"] or "")


@pytest.fixture
def cli_check(
    tmp_path: Path,
    memdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> Callable[..., tuple[int, dict[str, Any]]]:
    """``memoryd check MEMDIR --json`` in-process (no daemon), with a config naming the checkout."""

    def run(checkout: Path, *flags: str) -> tuple[int, dict[str, Any]]:
        config = tmp_path / "xdg" / "memoryd" / "config.yaml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(f"checkouts:\n  {memdir}: {checkout}\n")
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
        monkeypatch.setenv("MEMORYD_SOCKET", str(tmp_path / "no.sock"))
        code = cli.main(["check", str(memdir), "--db", str(tmp_path / "db"), "--json", *flags])
        return code, json.loads(capsys.readouterr().out)

    return run


def test_memoryd_check_exits_1_only_with_strict(
    cli_check: Callable[..., tuple[int, dict[str, Any]]], make_memory: MakeMemory, repo: Repo
) -> None:
    _memory(make_memory, "project_old.md", "Legacy: src/old.py.")
    code, result = cli_check(repo.path)
    assert code == 0 and result["stale"] == 0 and result["citing"] == 1
    repo.git("rm", "-q", "src/old.py")
    repo.commit("drop old", when=T0 + DAY)
    code, result = cli_check(repo.path)
    assert code == 0 and result["stale"] == 1
    assert result["memories"][0]["staleness"]["missing"] == ["src/old.py"]
    code, _ = cli_check(repo.path, "--strict")
    assert code == 1


def test_fail_on_gone_ignores_paths_that_only_changed(
    cli_check: Callable[..., tuple[int, dict[str, Any]]], make_memory: MakeMemory, repo: Repo
) -> None:
    _memory(make_memory, "project_app.md", "Entry point: `src/app.py`.")
    repo.write("src/app.py", "v2\n")
    repo.commit("app v2", when=T0 + DAY)
    code, result = cli_check(repo.path, "--fail-on", "gone")
    assert result["memories"][0]["staleness"]["changed_since"] != []
    assert code == 0
    assert cli_check(repo.path, "--fail-on", "stale")[0] == 1
    assert cli_check(repo.path, "--strict")[0] == 1
    repo.git("mv", "src/app.py", "src/main.py")
    repo.commit("rename app", when=T0 + 2 * DAY)
    code, result = cli_check(repo.path, "--fail-on", "gone")
    assert result["memories"][0]["staleness"]["renamed"] == {"src/app.py": "src/main.py"}
    assert code == 1


def test_a_hook_cwd_counts_before_its_write_is_committed(
    store: IndexStore, memdir: Path, tmp_path: Path
) -> None:
    checker = Checker()
    queued: list[Callable[[sqlite3.Connection], None]] = []
    assert checker.note_cwd(str(memdir), str(tmp_path), queued.append)
    assert not checker.note_cwd(str(memdir), str(tmp_path), queued.append)  # not new
    found = checker.resolve(store.conn, str(memdir))
    assert (found["path"], found["source"]) == (str(tmp_path), "hook")
    assert len(queued) == 1  # and the write is still on its way to the index
