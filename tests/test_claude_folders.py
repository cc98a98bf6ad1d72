"""The memory folder Claude Code uses for a project, in every layout.

The expected folder names come from Claude Code 2.1.197 itself: the long-path
hashes below were computed by its own naming function (and ``make e2e`` checks
the whole resolution against the running CLI).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from git_repo import Repo

from memoryd import claude_folders as cf


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(cf, "MANAGED_SETTINGS", tmp_path / "etc" / "managed-settings.json")
    return {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}


def folder(env: dict[str, str], name: str) -> Path:
    return Path(env["CLAUDE_CONFIG_DIR"]) / "projects" / name / "memory"


def default(env: dict[str, str], project: Path) -> Path:
    """The folder named after ``project`` itself (no setting, no checkout)."""
    return folder(env, cf.folder_name(str(project)))


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("/home/a/my_repo x", "-home-a-my-repo-x"),
        ("/home/a/b+c@d~e.f", "-home-a-b-c-d-e-f"),
        ("/home/a/café", "-home-a-caf-"),
        ("/home/a/日本", "-home-a---"),
        # A character outside the BMP is two UTF-16 units in JavaScript: two dashes.
        ("/home/😀/x", "-home----x"),
        ("C:\\src\\x", "C--src-x"),
    ],
)
def test_every_character_but_ascii_letters_and_digits_becomes_a_dash(path: str, name: str) -> None:
    assert cf.folder_name(path) == name


@pytest.mark.parametrize(
    ("path", "suffix"),
    [
        ("/tmp/" + "d" * 250, "g1js6f"),
        ("/tmp/" + "é" * 230, "26hq9l"),
        ("/x/" + "😀" * 120, "rq304y"),
    ],
)
def test_a_name_over_200_characters_keeps_200_and_adds_claude_codes_hash(
    path: str, suffix: str
) -> None:
    name = cf.folder_name(path)
    assert name == cf.folder_name(path)[:200] + "-" + suffix
    assert len(name) == 201 + len(suffix)
    assert cf.folder_name(path[:-1]) != name


def test_a_plain_directory_is_named_after_itself(env: dict[str, str], tmp_path: Path) -> None:
    project = tmp_path / "my_app dir"
    (project / "src").mkdir(parents=True)
    got = cf.memory_folder(str(project), env)
    assert got.directory == folder(env, cf.folder_name(str(project)))
    assert "not in a git checkout" in got.reason
    # Outside git a subdirectory is a project of its own, as in Claude Code.
    sub = cf.memory_folder(str(project / "src"), env)
    assert sub.directory == folder(env, cf.folder_name(str(project / "src")))


def test_a_subdirectory_of_a_checkout_uses_the_checkouts_folder(
    env: dict[str, str], tmp_path: Path
) -> None:
    repo = Repo(tmp_path / "shop_api")
    (repo.path / "src" / "deep").mkdir(parents=True)
    want = folder(env, cf.folder_name(str(repo.path)))
    got = cf.memory_folder(str(repo.path / "src" / "deep"), env)
    assert got.directory == want
    assert got.reason == f"named after the git checkout {repo.path} of {repo.path / 'src' / 'deep'}"


def test_a_linked_worktree_shares_the_main_checkouts_folder(
    env: dict[str, str], tmp_path: Path
) -> None:
    repo = Repo(tmp_path / "main")
    repo.write("a.txt")
    repo.commit("one", when=1_700_000_000)
    linked = tmp_path / "linked wt"
    repo.git("worktree", "add", "-q", "-b", "side", str(linked))
    want = folder(env, cf.folder_name(str(repo.path)))
    assert cf.memory_folder(str(linked), env).directory == want
    (linked / "pkg").mkdir()
    assert cf.memory_folder(str(linked / "pkg"), env).directory == want


def test_a_git_file_that_is_not_a_worktree_is_its_own_checkout(
    env: dict[str, str], tmp_path: Path
) -> None:
    """A submodule's ``.git`` file points into the parent's modules: not a worktree."""
    sub = tmp_path / "parent" / "vendor" / "lib"
    sub.mkdir(parents=True)
    (tmp_path / "parent" / ".git" / "modules" / "lib").mkdir(parents=True)
    (sub / ".git").write_text("gitdir: ../../.git/modules/lib\n")
    assert cf.memory_folder(str(sub), env).directory == folder(env, cf.folder_name(str(sub)))


def test_a_symlinked_start_directory_resolves_to_its_target(
    env: dict[str, str], tmp_path: Path
) -> None:
    repo = Repo(tmp_path / "real")
    link = tmp_path / "link"
    link.symlink_to(repo.path)
    want = folder(env, cf.folder_name(str(repo.path)))
    assert cf.memory_folder(str(link), env).directory == want


def test_claude_config_dir_and_the_remote_memory_dir_move_the_base(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    monkeypatch.setattr(cf, "MANAGED_SETTINGS", tmp_path / "none.json")
    project = str(tmp_path)
    name = cf.folder_name(project)
    default = cf.memory_folder(project, {}).directory
    assert default == tmp_path / "h" / ".claude" / "projects" / name / "memory"
    moved = cf.memory_folder(project, {"CLAUDE_CONFIG_DIR": "/opt/cc"}).directory
    assert moved == Path("/opt/cc/projects") / name / "memory"
    remote = {"CLAUDE_CONFIG_DIR": "/opt/cc", "CLAUDE_CODE_REMOTE_MEMORY_DIR": "/mnt/mem"}
    got = cf.memory_folder(project, remote).directory
    assert got == Path("/mnt/mem/projects") / name / "memory"


def write_settings(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"model": "opus", "autoMemoryDirectory": value}))


def test_auto_memory_directory_settings_win_in_claude_codes_order(
    env: dict[str, str], tmp_path: Path
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    user = Path(env["CLAUDE_CONFIG_DIR"]) / "settings.json"
    write_settings(user, "~/notes/memory")
    got = cf.memory_folder(str(project), env)
    assert got.directory == Path(os.environ["HOME"]) / "notes" / "memory"
    assert got.reason == f"autoMemoryDirectory in {user}"
    write_settings(project / ".claude" / "settings.json", "/srv/shared-memory/")
    assert cf.memory_folder(str(project), env).directory == Path("/srv/shared-memory")
    write_settings(project / ".claude" / "settings.local.json", "/srv/mine")
    assert cf.memory_folder(str(project), env).directory == Path("/srv/mine")
    write_settings(cf.MANAGED_SETTINGS, "/srv/policy")
    assert cf.memory_folder(str(project), env).directory == Path("/srv/policy")
    override = {**env, "CLAUDE_COWORK_MEMORY_PATH_OVERRIDE": "/srv/override"}
    got = cf.memory_folder(str(project), override)
    assert (got.directory, got.reason) == (
        Path("/srv/override"),
        "$CLAUDE_COWORK_MEMORY_PATH_OVERRIDE",
    )


@pytest.mark.parametrize("bad", ["relative/dir", "~/../escape", "/", "//", "", 42, "~/", "/a\x00b"])
def test_settings_claude_code_would_ignore_are_ignored(
    env: dict[str, str], tmp_path: Path, bad: object
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    write_settings(Path(env["CLAUDE_CONFIG_DIR"]) / "settings.json", bad)
    assert cf.memory_folder(str(project), env).directory == default(env, project)


def test_broken_settings_files_are_skipped(env: dict[str, str], tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text("{not json")
    (project / ".claude" / "settings.local.json").write_text("[1, 2]")
    assert cf.memory_folder(str(project), env).directory == default(env, project)


def test_the_start_directory_comes_from_claude_project_dir_or_the_transcript(
    tmp_path: Path,
) -> None:
    start = tmp_path / "my app"
    (start / "src" / "x").mkdir(parents=True)
    transcript = f"/c/projects/{cf.folder_name(str(start))}/abc.jsonl"
    cwd = str(start / "src" / "x")
    assert cf.project_dir(cwd, None, {"CLAUDE_PROJECT_DIR": str(start)}) == str(start)
    # The agent cd'ed into src/x since the start: the transcript's folder names the start.
    assert cf.project_dir(cwd, transcript, {}) == str(start)
    assert cf.project_dir(cwd, "/c/projects/-elsewhere/abc.jsonl", {}) == cwd
    assert cf.project_dir(cwd, None, {}) == cwd


def test_known_folders_lists_project_folders_and_the_users_setting(
    env: dict[str, str], tmp_path: Path
) -> None:
    projects = Path(env["CLAUDE_CONFIG_DIR"]) / "projects"
    for name in ("-b", "-a"):
        (projects / name / "memory").mkdir(parents=True)
    (projects / "-c").mkdir()  # transcripts only, no memory folder
    shared = tmp_path / "shared"
    shared.mkdir()
    write_settings(Path(env["CLAUDE_CONFIG_DIR"]) / "settings.json", str(shared))
    assert cf.known_folders(env) == [projects / "-a" / "memory", projects / "-b" / "memory", shared]


def test_the_git_root_walk_matches_git_itself(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    (repo.path / "a" / "b").mkdir(parents=True)
    top = subprocess.run(
        ["git", "-C", str(repo.path / "a" / "b"), "rev-parse", "--show-toplevel"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert cf.git_root(str(repo.path / "a" / "b")) == top
