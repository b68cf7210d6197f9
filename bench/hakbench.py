#!/usr/bin/env python3
"""hakmem's benchmark driver: `python3 bench/hakbench.py --help`."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from hakbench.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
