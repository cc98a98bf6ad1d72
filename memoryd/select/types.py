"""What the selector takes and gives: the ``select`` request, its result, one run's costs.

The request is the method's declaration (:class:`memoryd.methods.Select`),
decoded once where it enters memoryd; the result is a
:class:`~memoryd.replies.SelectResult`, whose keys (in this order) are the
documented reply of ``select``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from memoryd.methods import Select as SelectRequest
from memoryd.replies import SelectResult

__all__ = ["SelectRequest", "Selection"]


@dataclass(frozen=True)
class Selection:
    """What one selector run found, and what its judge (if one was asked) cost."""

    result: SelectResult
    tokens: tuple[int, int] = (0, 0)
    judge: str | None = None
    """The judge asked (whether or not its answer was used)."""
    shortlist: int = 0
    """Memories the judge was shown."""
    judge_ms: float | None = None
    left_out: Mapping[str, object] | None = None
    """Per rule, the file names it kept out (for telemetry, :func:`.telemetry.left_out`)."""
