"""What tools/generate.py makes of the declarations is what is checked in."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_protocol_tables_and_the_cli_flags_table_are_generated_from_the_declarations() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "generate.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
