"""Installing without cloning: build the wheel, install it into a clean virtualenv, take the tour.

Marked ``wheel`` and left out of ``make test`` (see pyproject.toml): building
the wheel and installing memoryd's dependencies into a new virtualenv takes
minutes on a 2-core machine (figures in docs/benchmarks.md). Run it with
``make wheel-tour``. The virtualenv lives outside the repository and the
commands run from a scratch folder, so nothing is imported from the checkout.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from isolation import USER_ENV
from test_newcomer import REPO, run_tour

pytestmark = [pytest.mark.wheel, pytest.mark.timeout(1800)]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the wheel, the python of a fresh virtualenv with ``memoryd[mcp]`` installed from it)."""
    work = tmp_path_factory.mktemp("wheel")
    dist = work / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(REPO)],
        check=True,
        capture_output=True,
        timeout=900,
        env=USER_ENV,  # pip's own config (index, cache) is the user's; memoryd does not run here
    )
    (wheel,) = dist.glob("memoryd-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(work / "venv")], check=True, timeout=300)
    python = work / "venv" / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", f"{wheel}[mcp]"],
        check=True,
        timeout=1200,
        cwd=work,
        env=USER_ENV,
    )
    return wheel, python


def test_the_wheel_holds_the_units_the_license_and_a_description_without_dead_links(
    installed: tuple[Path, Path],
) -> None:
    wheel, _ = installed
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        meta = zf.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "memoryd/systemd/memoryd.service" in names and "memoryd/systemd/memoryd.socket" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "License-Expression: MIT" in meta and "Provides-Extra: mcp" in meta
    assert "](docs/" not in meta and "](CHANGELOG" not in meta


def test_the_installed_wheel_runs_the_readme_tour(
    installed: tuple[Path, Path], tmp_path: Path
) -> None:
    _, python = installed
    where = subprocess.run(
        [
            str(python),
            "-c",
            "import memoryd, memoryd.integrations.mcp_server; print(memoryd.__file__)",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout.strip()
    assert where.startswith(str(python.parent.parent)), where  # the wheel's copy, not the checkout
    units = tmp_path / "units"
    memoryd = str(python.parent / "memoryd")
    subprocess.run([memoryd, "install-service", "--unit-dir", str(units)], check=True, cwd=tmp_path)
    assert f"ExecStart={python} -m memoryd serve" in (units / "memoryd.service").read_text()
    run_tour(tmp_path, str(python))
