"""Choosing the memories that clearly help a query.

Public surface: :class:`Selector` (rules + rankers + telemetry, as ``select``
runs them), :class:`LocalRanker` (the embedded default), :class:`Candidate`
and :func:`tool_usage_docs`. The Claude ranker lives in
:mod:`memoryd.select.claude` and is imported only when an API key is set.
"""

from memoryd.select.candidates import Candidate
from memoryd.select.local import LocalRanker, Scored
from memoryd.select.selector import Selector
from memoryd.select.tool_rules import is_tool_usage_doc, tool_usage_docs

__all__ = ["Candidate", "LocalRanker", "Scored", "Selector", "is_tool_usage_doc", "tool_usage_docs"]
