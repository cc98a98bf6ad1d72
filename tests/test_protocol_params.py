"""docs/protocol.md's parameter tables are what tools/protocol_params.py makes of them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_protocol_page_tables_are_generated_from_the_declarations() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "protocol_params.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
