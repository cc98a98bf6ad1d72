"""Session memories: the ``save`` file format, ``save`` and ``load_last`` on disk, ``context``."""
