"""``python -m memoryd`` is the ``memoryd`` command."""

import sys

from memoryd.cli import main

if __name__ == "__main__":
    sys.exit(main())
