"""``python -m gpcompiler.cli``: the command line, as ``python -m gpcompiler``."""
import sys

from .parser import main

if __name__ == "__main__":
    sys.exit(main())
