"""Build the privatize page, docs/_extra/privatize/index.html (docs/reference/browser.md):
one self-contained HTML file from page.html, page.css and page.mjs here, the shipped JS
modules of generated/js/ and the bundled ECG window 0.

One file, because a browser refuses ES module imports from a page opened from disk
(file:// has no origin that CORS could allow): each module is inlined unchanged in its own
``<script type="module">``, followed by one line that registers its API for the page
script. The Content-Security-Policy allows exactly these scripts and the style, by their
SHA-256, and nothing else: no connection, no image, no font, no frame.

    python docs/_page/build.py          # rewrite the page
    python docs/_page/build.py --check  # exit 1 if the committed page is stale

tests/test_page.py fails when the committed page differs from what this builds.
"""
import base64
import hashlib
import html
import importlib.util
import json
import sys
from pathlib import Path
from string import Template

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PAGE = ROOT / "docs" / "_extra" / "privatize" / "index.html"
# The module API the page uses (docs/reference/js.md); each inlined module exports it.
API = ("NAME", "TITLE", "DOMAIN_UNITS", "VALUE_UNITS", "VALUE_DIM", "CURVE_INTERVAL",
       "SPEC_SHA256", "TOOL_VERSION", "releaseFacts", "projectAndPrivatize", "evaluate",
       "sourceOS", "sourceKey", "parseKey", "METRIC", "METRIC_SHA256", "ledgerRecord",
       "ledgerKey", "curveDigest", "DeviceLedger", "browserStorage")


def _register(name):
    """The line after module ``name`` that registers its API, with the public parameter
    values it was compiled at (the spec's defaults: the JS module does not export them;
    read from the Python target of the same spec, the release file's ``parameters``)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "generated" / f"{name}.py")
    python = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(python)
    parameters = {key: float(value) for key, value in python.PARAMETERS.items()}
    extra = f", PARAMETERS: {json.dumps(parameters)}" if parameters else ""
    return (f"\n;(globalThis.gpcompilerModules ??= {{}})[NAME] = {{{', '.join(API)}{extra}}};\n")


def _inline(text, what):
    """``text`` for inside a <script> or <style> element: refused if it could end it."""
    lowered = text.lower()
    if "</script" in lowered or "</style" in lowered or "<!--" in lowered:
        raise ValueError(f"{what} contains '</script', '</style' or '<!--': it cannot be inlined")
    return text


def _hash(text):
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def ecg_window():
    """Window 0 of the bundled ECG (gpcompiler privatize's bundled:ecg) as a curves CSV,
    each number as Python's repr (so the page reads the same floats), and its axis labels."""
    sys.path.insert(0, str(ROOT))
    from gpcompiler.io.curves import bundled_ecg
    curves = bundled_ecg(0)
    rows = [f"curve,t,{curves.value_names[0]}"]
    rows += [f"{curves.ids[0]},{t!r},{y!r}" for t, y in zip(curves.times[0].tolist(),
                                                            curves.values[0].tolist())]
    return ("\n".join(rows), f"t (1/{1 / curves.seconds_per_unit:g} s)",
            curves.value_labels[0])


def build():
    """The page's HTML text."""
    modules = [_inline(path.read_text(encoding="utf-8"), path.name) + _register(path.stem)
               for path in sorted((ROOT / "generated" / "js").glob("*.mjs"))]
    if not modules:
        raise ValueError("generated/js/ holds no module: compile the specs with --target js")
    script = _inline((HERE / "page.mjs").read_text(encoding="utf-8"), "page.mjs")
    style = _inline((HERE / "page.css").read_text(encoding="utf-8"), "page.css")
    csp = (f"default-src 'none'; script-src {' '.join(map(_hash, modules + [script]))}; "
           f"style-src {_hash(style)}; connect-src 'none'; img-src 'none'; font-src 'none'; "
           "media-src 'none'; object-src 'none'; frame-src 'none'; worker-src 'none'; "
           "form-action 'none'; base-uri 'none'")
    ecg, time_label, value_label = ecg_window()
    from gpcompiler import __version__
    return Template((HERE / "page.html").read_text(encoding="utf-8")).substitute(
        csp=csp, style=style, script=script, version=__version__, ecg=_inline(ecg, "ECG"),
        ecg_time=html.escape(time_label), ecg_value=html.escape(value_label),
        modules="\n".join(f'<script type="module">{m}</script>' for m in modules))


def main(argv):
    text = build()
    if argv == ["--check"]:
        current = PAGE.exists() and PAGE.read_text(encoding="utf-8") == text
        print(f"{PAGE.relative_to(ROOT)} is {'current' if current else 'stale'}")
        return 0 if current else 1
    PAGE.parent.mkdir(parents=True, exist_ok=True)
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)} ({len(text.encode()):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
