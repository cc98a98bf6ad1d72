"""``python -m memoryd`` is the ``memoryd`` command."""

import sys

from memoryd.cli import main

# Guarded: worker processes of a first index re-import the main module by name.
if __name__ == "__main__":
    sys.exit(main())
