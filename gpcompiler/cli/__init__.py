"""The command line (``gpcompiler = "gpcompiler.cli:main"``): one module per command
(compile.py: compile, check, explain; privatize.py; cdf.py; audit.py; experiment.py), over
the shared writers of release files (writers.py), figures (figures.py) and output helpers
(common.py); parser.py builds the parser (its docstring is the --help text) and runs
``main``."""
from .parser import build_parser, main

__all__ = ["main", "build_parser"]
