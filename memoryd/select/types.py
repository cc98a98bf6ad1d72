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
    """What one selector run found; the judge asked (used or not), the memories it was shown,
    its time and tokens; what each rule kept out (:func:`.telemetry.left_out`)."""

    result: SelectResult
    tokens: tuple[int, int] = (0, 0)
    judge: str | None = None
    shortlist: int = 0
    judge_ms: float | None = None
    left_out: Mapping[str, object] | None = None
