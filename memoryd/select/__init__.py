"""Choosing the memories that clearly help a query: the rules, the local ranker and the judges.

Nothing is imported here: whoever opens the store imports the term analysis,
which must not pull in the selector.
"""
