"""What the command line says to a newcomer: usage, hints, tables, normalised names.

In-process through :func:`memoryd.cli.main` with a socket nobody listens on,
so each test also shows the no-daemon path a fresh install takes.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import MakeMemory

from memoryd import __version__
from memoryd.cli import main

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "memory"


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORYD_SOCKET", str(tmp_path / "no-daemon.sock"))
    monkeypatch.setenv("MEMORYD_DB", str(tmp_path / "index.db"))
    for var in ("XDG_STATE_HOME", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        monkeypatch.setenv(var, str(tmp_path / "xdg" / var.lower()))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_an_unknown_option_shows_the_subcommands_own_usage(
    capsys: pytest.CaptureFixture[str], memdir: Path
) -> None:
    code, out, err = run(capsys, "select", "q", "--dir", str(memdir), "--frobnicate")
    assert code == 2 and out == ""
    assert err.startswith("usage: memoryd select ")
    assert "memoryd select: error: unrecognized arguments: --frobnicate" in err
    assert "COMMAND ..." not in err
    code, _, err = run(capsys, "install-hook", "claude-code", "--frobnicate")
    assert code == 2 and err.startswith("usage: memoryd install-hook claude-code ")


def test_status_without_a_daemon_says_how_to_start_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "status")
    assert code == 1 and out == ""
    assert "no memoryd daemon answers on" in err
    assert "`memoryd serve`" in err and "systemctl --user start memoryd" in err


def test_stats_prints_an_aligned_table_not_python_reprs(
    capsys: pytest.CaptureFixture[str], memdir: Path, make_memory: MakeMemory
) -> None:
    make_memory("feedback_tests.md", "run the tests before pushing")
    for query in ("run the tests", "deploy the kubernetes cluster"):
        assert run(capsys, "select", query, "--dir", str(memdir), "--ranker", "local")[0] == 0
    code, out, _ = run(capsys, "stats", "--since", "1h")
    assert code == 0
    assert "{" not in out and "'" not in out
    assert "selector runs since" in out and ": 2 (empty answers 50%)" in out
    table = out.split("\n\n")[1].splitlines()
    assert re.fullmatch(r" +runs / rate", table[0])
    assert re.fullmatch(r"ranker +local +2", table[1])
    assert len({len(row) for row in table}) == 1  # right-aligned values end in one column
    assert "\nunknown names dropped: 0\n" in out


def test_a_capitalised_project_is_lowercased_with_a_note(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = tmp_path / "memory"
    shutil.copytree(EXAMPLES, folder)
    code, out, err = run(capsys, "load-last", "--dir", str(folder), "--project", "TaskTrack")
    assert code == 0
    assert "project name 'TaskTrack' lowercased to 'tasktrack'" in err
    assert "2025-06-05-14-15-tasktrack.md" in out
    code, _, err = run(capsys, "load-last", "--dir", str(folder), "--project", "Task/Track")
    assert code == 1 and "'project' must be a slug" in err and "lowercased" not in err


def test_select_on_a_wrong_folder_says_what_was_searched(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    project = tmp_path / "project"
    shutil.copytree(EXAMPLES, project / "memory")
    (tmp_path / "empty").mkdir()
    code, out, err = run(capsys, "select", "run the tests", "--dir", str(tmp_path / "empty"))
    assert (code, out) == (1, "")
    assert err.endswith(f"memoryd: error: no memories in {tmp_path / 'empty'} (0 files)\n")
    code, out, err = run(capsys, "select", "run the tests", "--dir", str(project))
    assert (code, out) == (1, "")
    assert err.endswith(
        f"memoryd: error: {project} holds no memory files; did you mean {project / 'memory'}? "
        "(subfolders with memory files: memory)\n"
    )
    code, out, _ = run(capsys, "select", "marketing footer copy", "--dir", str(project / "memory"))
    assert out == "(no memory clearly helps with this query)\n"


def test_a_second_save_of_a_session_says_what_it_kept(
    capsys: pytest.CaptureFixture[str], memdir: Path
) -> None:
    save = ["save", "--dir", str(memdir), "--project", "demo", "--session", "2026-01-05-10-00"]
    code, out, _ = run(capsys, *save, "--summary", "one", "--step", "S0=read", "--decision", "d1")
    assert code == 0 and out.startswith("created ")
    code, out, _ = run(capsys, *save, "--summary", "two", "--step", "S1=wrote")
    assert code == 0
    assert out.endswith("(kept from the earlier save: steps S0; 1 key decision)\n"), out
    code, out, _ = run(capsys, *save, "--summary", "three", "--replace")
    assert code == 0 and out.startswith("replaced ") and "overwritten" in out
    text = next(memdir.glob("2026-01-05-10-00-demo.md")).read_text()
    assert "three" in text and "S0" not in text
    code, out, _ = run(capsys, "save", "--help")
    assert "keeps what the earlier save recorded" in " ".join(out.split())


def test_save_records_checkpoint_decisions_given_on_the_command_line(
    capsys: pytest.CaptureFixture[str], memdir: Path
) -> None:
    decisions = '{"CP-S1": {"option": "B", "note": "keep the v1 endpoints"}}'
    save = ["save", "--dir", str(memdir), "--project", "demo", "--session", "2026-01-05-10-00"]
    code, out, _ = run(capsys, *save, "--summary", "one", "--checkpoint-decisions", decisions)
    assert code == 0 and out.startswith("created ")
    code, out, _ = run(capsys, "load-last", "--dir", str(memdir), "--project", "demo", "--json")
    assert json.loads(out)["fields"]["checkpoint_decisions"] == {
        "CP-S1": {"option": "B", "note": "keep the v1 endpoints"}
    }
    code, _, err = run(capsys, *save, "--checkpoint-decisions", '["CP-S1"]')
    assert code == 2 and "--checkpoint-decisions: must be a JSON object" in err


def test_an_explicit_anthropic_ranker_without_a_key_is_an_error(
    capsys: pytest.CaptureFixture[str],
    memdir: Path,
    make_memory: MakeMemory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    make_memory("feedback_tests.md", "run the tests before pushing")
    code, out, err = run(capsys, "select", "tests", "--dir", str(memdir), "--ranker", "anthropic")
    assert (code, out) == (1, "")
    assert "memoryd: error: ranker 'anthropic' needs an Anthropic API key" in err


def test_surfaced_paths_as_select_printed_them_are_excluded(
    capsys: pytest.CaptureFixture[str], memdir: Path, make_memory: MakeMemory
) -> None:
    path = make_memory("feedback_tests.md", "run the tests before pushing")
    code, out, _ = run(capsys, "select", "run the tests", "--dir", str(memdir))
    assert out.splitlines()[0] == str(path)
    code, out, _ = run(
        capsys, "select", "run the tests", "--dir", str(memdir), "--surfaced", str(path)
    )
    assert (code, out) == (0, "(no memory clearly helps with this query)\n")
    code, _, err = run(
        capsys, "select", "run the tests", "--dir", str(memdir), "--surfaced", "/etc/passwd"
    )
    assert code == 1 and "'surfaced' entry '/etc/passwd' is not a file of" in err


def test_a_misspelt_option_suggests_the_right_one(
    capsys: pytest.CaptureFixture[str], memdir: Path
) -> None:
    code, out, err = run(capsys, "select", "q", "--dri", str(memdir))
    assert code == 2 and out == ""
    assert err.startswith("usage: memoryd select ")
    assert "memoryd select: error: unrecognized argument --dri; did you mean --dir?" in err
    code, _, err = run(capsys, "--verison")
    assert code == 2 and "did you mean --version?" in err
    # A prefix argparse accepts is not a mistake.
    assert run(capsys, "select", "q", "--di", str(memdir))[0] != 2  # the empty folder is the error


def test_a_missing_dir_with_a_near_miss_suggests_it(
    capsys: pytest.CaptureFixture[str], memdir: Path
) -> None:
    code, _, err = run(capsys, "select", "q", "--dir", str(memdir) + "y")
    assert code == 1
    assert err == f"memoryd: error: memory directory not found: {memdir}y; did you mean {memdir}?\n"
    code, _, err = run(capsys, "select", "q", "--dir", str(memdir.parent / "zzz-unlike"))
    assert code == 1 and "did you mean" not in err


def test_stop_without_a_daemon_exits_0_saying_nothing_was_running(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run(capsys, "stop")
    assert code == 0 and err == ""
    assert out == f"no memoryd daemon was running on {tmp_path / 'no-daemon.sock'}\n"


def test_context_for_an_unknown_project_names_the_projects_that_exist(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = tmp_path / "memory"
    shutil.copytree(EXAMPLES, folder)
    code, out, _ = run(capsys, "context", "due dates", "--dir", str(folder), "--project", "ghost")
    assert code == 0
    assert "no session memories of project 'ghost'" in out
    assert "projects with sessions there: tasktrack" in out


def test_version_says_when_no_daemon_answers(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = run(capsys, "--version")
    assert code == 0
    assert out.splitlines() == [
        f"memoryd {__version__}",
        f"daemon: none answers on {tmp_path / 'no-daemon.sock'}",
    ]
