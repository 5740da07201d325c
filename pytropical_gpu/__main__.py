"""``python -m pytropical_gpu info | bench``: see :mod:`pytropical_gpu.cli`."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
