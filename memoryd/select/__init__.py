"""Choosing the memories that clearly help a query: the rules, the local ranker and the judges."""
