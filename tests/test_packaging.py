"""One path per source file: the package layout pyproject.toml declares matches the disk.

``memoryd.daemon``, ``memoryd.indexer``, ``memoryd.ipc`` and ``memoryd.systemd``
are top-level folders mapped into the ``memoryd`` name by setuptools'
package-dir (no symlinks). A new subpackage must be listed in pyproject.toml,
or a wheel would silently leave it out: these checks catch that.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

import memoryd.daemon
import memoryd.ipc
from memoryd.integrations.systemd_units import UNITS, render, unit_text

ROOT = Path(__file__).resolve().parents[1]


def setuptools_table() -> dict[str, object]:
    with (ROOT / "pyproject.toml").open("rb") as fh:
        table: dict[str, object] = tomllib.load(fh)["tool"]["setuptools"]
    return table


def test_every_package_on_disk_is_declared_and_mapped_once() -> None:
    table = setuptools_table()
    mapping = table["package-dir"]
    assert isinstance(mapping, dict)
    on_disk = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "memoryd").rglob("__init__.py")
    }
    on_disk |= {
        name for name, folder in mapping.items() if (ROOT / folder / "__init__.py").is_file()
    }
    declared = table["packages"]
    assert isinstance(declared, list)
    assert sorted(on_disk) == sorted(declared)


def test_no_symlinks_inside_the_package() -> None:
    assert [p for p in (ROOT / "memoryd").rglob("*") if p.is_symlink()] == []


def test_mapped_packages_import_from_their_one_folder() -> None:
    assert Path(memoryd.daemon.__file__).resolve() == ROOT / "daemon" / "__init__.py"
    assert Path(memoryd.ipc.__file__).resolve() == ROOT / "ipc" / "__init__.py"


def test_systemd_units_are_found_as_package_data() -> None:
    for name in UNITS:
        assert unit_text(name) == (ROOT / "systemd" / name).read_text(encoding="utf-8")


FAKE_PYTHON = """#!/bin/sh
# Stands in for python3 -m venv DIR: a venv whose pip logs each install's start and end.
mkdir -p "$3/bin"
printf '#!/bin/sh\\necho "start $*" >> %s/log; sleep 0.5; echo "end $*" >> %s/log\\n' \
    "$(dirname "$3")" "$(dirname "$3")" > "$3/bin/pip"
chmod +x "$3/bin/pip"
echo created >> "$(dirname "$3")/log"
"""


def test_make_serve_and_make_test_can_set_up_the_venv_at_the_same_time(tmp_path: Path) -> None:
    """Both set-ups run under one lock: one venv created, the two installs never overlap."""
    python = tmp_path / "python"
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    env = {**os.environ, "PYTHON": str(python)}
    venv = tmp_path / "venv"
    runs = [
        subprocess.Popen(
            ["sh", str(ROOT / "tools" / "venv.sh"), kind, f"{venv}/.{kind}-1", str(venv)],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for kind in ("runtime", "dev")
    ]
    said = "".join(run.communicate(timeout=60)[0] for run in runs)
    assert [run.returncode for run in runs] == [0, 0]
    log = (tmp_path / "log").read_text().splitlines()
    assert log[0] == "created" and log.count("created") == 1
    # dev first also stamps runtime, so one install or two, never overlapping
    steps = [line.split()[0] for line in log[1:]]
    assert steps in (["start", "end"], ["start", "end", "start", "end"])
    assert (venv / ".dev-1").exists() and (venv / ".runtime-1").exists()
    assert re.search(r"the first time this takes \d+-\d+ s", said) or "dev tools" in said


def test_the_package_description_has_no_relative_links_and_the_license_ships() -> None:
    with (ROOT / "pyproject.toml").open("rb") as fh:
        project = tomllib.load(fh)["project"]
    description = (ROOT / project["readme"]).read_text(encoding="utf-8")
    # On a package index a relative link is dead: every link must be absolute.
    assert re.findall(r"\]\((?!https?://)[^)]*\)", description) == []
    assert "pipx install memoryd" in description
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert "MIT License" in (ROOT / "LICENSE").read_text(encoding="utf-8")


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze here")
def test_the_service_unit_keeps_its_hardening_score(tmp_path: Path) -> None:
    unit = tmp_path / "memoryd.service"
    unit.write_text(render("memoryd.service", []))
    done = subprocess.run(
        ["systemd-analyze", "security", "--offline=yes", "--no-pager", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    found = re.search(r"Overall exposure level for memoryd\.service: (\d+\.\d+)", done.stdout)
    assert found, done.stdout + done.stderr
    # 6.2 with every option a user manager can apply without user namespaces
    # (docs/security.md); 6.8 before MemoryDenyWriteExecute= and friends.
    assert float(found.group(1)) <= 6.2
    settings = {line.partition("=")[0] for line in unit.read_text().splitlines()}
    # Both fail the start in a user manager (status=218/CAPABILITIES).
    assert not settings & {"CapabilityBoundingSet", "ProtectClock"}
    assert {"MemoryDenyWriteExecute", "RestrictAddressFamilies"} <= settings
