"""Choosing the memories that clearly help a query.

Public surface: :class:`Selector` (rules + rankers + telemetry, as ``select``
runs them), :class:`LocalRanker` (the embedded default), :class:`Candidate`
and :func:`tool_usage_docs`. The judges live in :mod:`memoryd.select.claude` and
:mod:`memoryd.select.openai_compat`, imported only when one is configured.

The names are imported on first use (PEP 562): whoever opens the store
imports :mod:`memoryd.select.analysis` for its term analysis, which runs this
package first, and a run that only indexes (``memoryd index``) must not pay
for the selector, its SQLite reads and sqlite-utils.
"""

from typing import TYPE_CHECKING

from memoryd._lazy import lazy_getattr

if TYPE_CHECKING:
    from memoryd.select.candidates import Candidate
    from memoryd.select.local import LocalRanker, Scored
    from memoryd.select.selector import Selector
    from memoryd.select.tool_rules import is_tool_usage_doc, tool_usage_docs

__getattr__ = lazy_getattr(
    __name__,
    {
        "Candidate": "candidates",
        "LocalRanker": "local",
        "Scored": "local",
        "Selector": "selector",
        "is_tool_usage_doc": "tool_rules",
        "tool_usage_docs": "tool_rules",
    },
)

__all__ = ["Candidate", "LocalRanker", "Scored", "Selector", "is_tool_usage_doc", "tool_usage_docs"]
