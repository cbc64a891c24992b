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

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.mathjax", "sphinx_copybutton",
              "gpdocs"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "**/results.json", "_page", "_extra"]
myst_enable_extensions = ["dollarmath", "deflist"]
myst_heading_anchors = 3
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True}
html_theme = "furo"
html_title = f"gpcompiler {release}"
html_static_path = ["_static"]
html_css_files = ["gpdocs.css"]
# the privatize page, one self-contained file (docs/_page/build.py): site/privatize/index.html
html_extra_path = ["_extra"]
# the copy button copies a console block's commands (after "$ "), not their output
copybutton_prompt_text = "$ "
copybutton_only_copy_prompt_lines = True
nitpicky = False


# Pages merged into others (issue 34): the old address sends the browser on.
REDIRECTS = {"choosing": "howto/choose-basis-and-budget.html",
             "experiments": "evidence/experiments.html"}


def _write_redirects(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    for old, new in REDIRECTS.items():
        Path(app.outdir, f"{old}.html").write_text(
            f'<!DOCTYPE html>\n<meta charset="utf-8">\n<title>Moved</title>\n'
            f'<meta http-equiv="refresh" content="0; url={new}">\n'
            f'<p>This page moved to <a href="{new}">{new}</a>.</p>\n', encoding="utf-8")


def setup(app):
    app.connect("build-finished", _write_redirects)
