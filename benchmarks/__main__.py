"""``python -m benchmarks COMMAND``: see :mod:`benchmarks.cli` (run, list, report, compare, bench, search-time)."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
