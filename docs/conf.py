"""Sphinx configuration of the gpcompiler documentation site.

Build it (warnings are errors; every example on the site is executed while it builds):

    python -m pip install '.[docs]' && python -m sphinx -W -b html docs docs/_build/html
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE / "_ext")]

from gpcompiler import __version__  # noqa: E402

project = "gpcompiler"
author = "the gpcompiler authors"
copyright = "2026, the gpcompiler authors"
version = release = __version__

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.mathjax", "gpdocs"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "**/results.json", "_page", "_extra"]
myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True}
html_theme = "alabaster"
html_static_path = []
# the privatize page, one self-contained file (docs/_page/build.py): site/privatize/index.html
html_extra_path = ["_extra"]
nitpicky = False
