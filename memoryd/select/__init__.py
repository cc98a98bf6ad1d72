"""Choosing which memory files help with a query: candidates, tool rules and the local ranker."""
