"""``python -m causalnet``: the same as the ``causalnet`` command."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
