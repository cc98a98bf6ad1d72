"""Memory rot: check what memories cite against the code as it is now.

A memory that names ``src/billing/tax.py`` was true when it was written; the
file may since have been moved, deleted or rewritten. This package finds the
checkout a memory folder belongs to (:mod:`.checkout`), reads the code
citations the indexer pulled out of each memory (:mod:`memoryd.indexer.citations`),
compares them with the checkout's git history (:mod:`.git`, :mod:`.verdicts`),
and keeps the verdicts in the index (:mod:`.results`) so that ``select``, the
hook, the report and ``list`` only read them. Nothing here ever edits a memory.
"""
