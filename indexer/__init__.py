"""Memory files on disk to rows in SQLite: parser, scanner, store, incremental sync.

Import the modules themselves: :mod:`~memoryd.indexer.parse` (``parse_file``
never raises; errors are data), :mod:`~memoryd.indexer.store` (``IndexStore``,
the one write connection; ``open_reader``), :mod:`~memoryd.indexer.sync`
(``Syncer`` makes the index equal to the disk) and
:mod:`~memoryd.indexer.queries` (reads). The package imports nothing, so the
hook's credential redaction (:mod:`~memoryd.indexer.secrets`, pure ``re``)
loads neither SQLite nor YAML.
"""
