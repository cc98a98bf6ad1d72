"""Memory files on disk to rows in SQLite: scanner, parser, store, incremental sync, reads.

The package imports nothing, so the hook's credential redaction
(:mod:`~memoryd.indexer.secrets`, pure ``re``) loads neither SQLite nor YAML.
"""
