"""Shell completion: generated from the parser, and driven in real shells.

bash is always here; zsh and fish are driven when installed (``apt-get
install zsh fish``), and their scripts' syntax is checked with ``-n`` then.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
from pathlib import Path

import pytest

from memoryd.cli import build_parser
from memoryd.completion import SHELLS, script


def every_command_and_option(parser: argparse.ArgumentParser) -> set[str]:
    """Every subcommand name and long option anywhere under ``parser``."""
    found: set[str] = set()
    for action in parser._actions:
        found.update(o for o in action.option_strings if o.startswith("--"))
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.add(name)
                found |= every_command_and_option(sub)
    return found


@pytest.mark.parametrize("shell", SHELLS)
def test_every_command_and_option_of_the_parser_is_completed(shell: str) -> None:
    text = script(shell, build_parser())

    def spelt(word: str) -> str:  # fish names a long option `-l name`
        return f"-l {word[2:]} " if shell == "fish" and word.startswith("--") else word

    missing = sorted(w for w in every_command_and_option(build_parser()) if spelt(w) not in text)
    assert missing == []


BASH_DRIVER = """
source "$1"
t() { COMP_WORDS=("${@:2}"); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); COMPREPLY=(); _memoryd
      echo "${COMPREPLY[*]}"; }
cd "$2"
t x memoryd se
t x memoryd select q --d
t x memoryd select q --dir me
t x memoryd select --ranker ""
t x memoryd hook claude-code --t
t x memoryd config ""
t x memoryd --ver
t x memoryd save --summary "" ""
"""


def test_bash_completes_commands_options_values_and_folders(tmp_path: Path) -> None:
    completion = tmp_path / "memoryd.bash"
    completion.write_text(script("bash", build_parser()))
    (tmp_path / "memory").mkdir()
    (tmp_path / "memo.txt").write_text("a file, not a folder")
    out = subprocess.run(
        ["bash", "-c", BASH_DRIVER, "bash", str(completion), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.stderr == ""
    assert out.stdout.splitlines() == [
        "serve select",
        "--dir --db",
        "memory",  # --dir takes a folder: the file beside it is not offered
        "auto local anthropic openai",
        "--timeout",
        "check show",
        "--version",
        "",  # after --summary's value: save takes no positional, has no subcommands
    ]


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_script_parses_and_completes(tmp_path: Path) -> None:
    completion = tmp_path / "memoryd.zsh"
    completion.write_text(script("zsh", build_parser()))
    assert subprocess.run(["zsh", "-n", str(completion)]).returncode == 0
    driver = (
        'compadd() { shift; print -r -- "$*"; }; _files() { print -r -- "_files $*"; }\n'
        f"source {completion}\n"
        't() { words=("$@"); CURRENT=${#words}; _memoryd; }\n'
        't memoryd select --ranker ""\nt memoryd select q --dir me\nt memoryd config ""\n'
    )
    out = subprocess.run(["zsh", "-c", driver], capture_output=True, text=True, timeout=30)
    assert out.stderr == ""
    assert out.stdout.splitlines() == ["auto local anthropic openai", "_files -/", "check show"]


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_script_parses_and_completes(tmp_path: Path) -> None:
    completion = tmp_path / "memoryd.fish"
    completion.write_text(script("fish", build_parser()))
    assert subprocess.run(["fish", "-n", str(completion)]).returncode == 0
    driver = (
        f"source {completion}\n"
        'complete -C "memoryd select --ranker "\n'
        'complete -C "memoryd install-hook claude-code --s"\n'
    )
    out = subprocess.run(
        ["fish", "--no-config", "-c", driver], capture_output=True, text=True, timeout=30
    )
    assert out.stderr == ""
    lines = out.stdout.splitlines()
    assert lines[:3] == ["anthropic", "auto", "local"]
    assert lines[3].startswith("--settings\tsettings file")
