"""bench/reliability.py's ``symlink-race``: a memory swapped with a link to an outside file.

For a few seconds one thread swaps ``feedback_deploy.md`` (atomically, by
rename) between a regular file and a symbolic link to a file outside the
root that holds a secret text, as fast as it can, while clients ask
``select`` and ``list`` and read each selected memory as the Claude Code hook
and the MCP tool do (``memory_text`` inside the folder asked about). Held
when the secret never appears in any answer or any text read, no request is
answered ``internal``, and once the swapping stops on the regular file the
index shows it again.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _limits import NewDaemon

from memoryd._delivery import memory_text
from memoryd.errors import MemorydError, RequestError

SECRET = "zebra-secret-outside-the-root"
SECONDS = 5.0
CLIENTS = 3
REGULAR = "---\ndescription: How we deploy the billing service\ntype: feedback\n---\nUse make.\n"
OUTSIDE = f"---\ndescription: deploy billing {SECRET}\ntype: feedback\n---\n{SECRET}\n"


def symlink_race(new_daemon: NewDaemon, workdir: Path, row: Callable[..., Any]) -> Any:
    d = new_daemon(workdir, "symlink-race")
    memory = d.root / "feedback_deploy.md"
    memory.write_text(REGULAR)
    (d.root / "project_other.md").write_text(
        "---\ndescription: Billing service deploy checklist\ntype: project\n---\nCheck.\n"
    )
    outside = d.home / "elsewhere.md"
    outside.write_text(OUTSIDE)
    d.start()
    stop = threading.Event()
    counts = {"swaps": 0, "selects": 0, "lists": 0, "reads": 0, "leaks": 0}
    counts |= {"errors": 0, "internal": 0}
    lock = threading.Lock()

    def swapper() -> None:
        spare_file, spare_link = d.root / ".swap-file", d.root / ".swap-link"
        while not stop.is_set():
            spare_file.write_text(REGULAR)
            os.replace(spare_file, memory)
            with contextlib.suppress(FileNotFoundError):
                spare_link.unlink()
            os.symlink(outside, spare_link)
            os.replace(spare_link, memory)
            counts["swaps"] += 2
        spare_file.write_text(REGULAR)
        os.replace(spare_file, memory)  # ends on the regular file

    def client() -> None:
        root = str(d.root)
        within = os.path.realpath(root)
        with d.client() as c:
            while not stop.is_set():
                seen: list[str] = []
                try:
                    picked = c.select("how do we deploy billing", root, ranker="local")
                    seen.append(repr(picked))
                    for entry in picked["selected"]:
                        with contextlib.suppress(OSError):
                            seen.append(memory_text(entry["path"], within))
                            tally("reads")
                    seen.append(repr(c.list(root)))
                    tally("selects", "lists")
                except RequestError as exc:
                    tally("internal" if exc.code == "internal" else "errors")
                except MemorydError:
                    tally("errors")
                if any(SECRET in text for text in seen):
                    tally("leaks")

    def tally(*names: str) -> None:
        with lock:
            for name in names:
                counts[name] += 1

    threads = [threading.Thread(target=swapper)]
    threads += [threading.Thread(target=client) for _ in range(CLIENTS)]
    for t in threads:
        t.start()
    time.sleep(SECONDS)
    stop.set()
    for t in threads:
        t.join(60)
    settled = _settled(d, str(memory))
    held = counts["leaks"] == 0 and counts["internal"] == 0 and settled is not None
    note = (
        f"{counts['swaps']} swaps in {SECONDS:g} s against {counts['selects']} selects, "
        f"{counts['lists']} lists and {counts['reads']} hook-style reads: the outside "
        f"text served {counts['leaks']} times; back on the regular file, indexed again "
        + (f"in {settled:.2f} s" if settled is not None else "NEVER")
    )
    result = row(
        "symlink swapped with an outside file",
        lost=counts["leaks"],
        converge_s=settled or 0.0,
        load={"errors": counts["errors"], "internal": counts["internal"]},
        held=held,
        note=note,
        d=d,
    )
    d.stop()
    return result


def _settled(d: Any, path: str, timeout: float = 30.0) -> float | None:
    """Seconds until ``path`` is listed as a valid memory with its own description again."""
    started = time.perf_counter()
    with d.client() as c:
        while time.perf_counter() - started < timeout:
            files = {f["path"]: f for f in c.list(str(d.root))["files"]}
            if files.get(path, {}).get("description") == "How we deploy the billing service":
                return time.perf_counter() - started
            time.sleep(0.1)
    return None
