"""The JS target (issue 32; docs/reference/js.md) on monomial32 and sinc_ecg, the curves of
benchmarks/c_target.py (3600 samples), as ratios measured in one run, with OS entropy:
(a) the JS B = 1 release in Node (projectAndPrivatize of one curve; privatize of its given
coefficients) against the C one (benchmarks/c_target.c) and the Python one;
(b) the size of generated/js/NAME.mjs: as written, gzipped (level 9), and minified by
terser (npm, installed into a temporary directory for this run) then gzipped; without npm
the minified size is reported as not measured.
Each time is the median over --repeats rounds (at least 5) of the mean of a number of calls.
Run: python -m benchmarks --only js   (or python -m benchmarks.js_target [--repeats 5])
"""
import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.c_target import CALLS, c_times, curve, line, python_times  # noqa: E402
from gpcompiler.compiler.build import import_module_file  # noqa: E402

JS_DIR = ROOT / "generated" / "js"
DRIVER = Path(__file__).resolve().parent / "js_target.mjs"


def js_times(name, t, y, repeats):
    """Node's median seconds per call: project, projectAndPrivatize, privatize of one row."""
    data = json.dumps({"t": t.tolist(), "y": y.tolist()})
    done = subprocess.run(["node", str(DRIVER), str(JS_DIR / f"{name}.mjs"), str(CALLS[name]),
                           str(repeats)], input=data, capture_output=True, text=True,
                          check=True, timeout=3600)
    return [float(w) for w in done.stdout.split()]


def terser(directory):
    """The terser command, installed by npm into ``directory`` (None: npm failed)."""
    if shutil.which("npm") is None:
        return None
    done = subprocess.run(["npm", "install", "--no-save", "--prefix", str(directory), "terser"],
                          capture_output=True, text=True, timeout=600)
    program = directory / "node_modules" / ".bin" / "terser"
    return program if done.returncode == 0 and program.exists() else None


def sizes(name, minifier, directory):
    """(bytes, gzipped bytes, minified gzipped bytes or None) of generated/js/NAME.mjs."""
    text = (JS_DIR / f"{name}.mjs").read_bytes()
    minified = None
    if minifier is not None:
        out = directory / f"{name}.min.mjs"
        subprocess.run([str(minifier), str(JS_DIR / f"{name}.mjs"), "--module", "--compress",
                        "--mangle", "-o", str(out)], check=True, capture_output=True, timeout=600)
        minified = (out.stat().st_size, len(gzip.compress(out.read_bytes(), 9)))
    return len(text), len(gzip.compress(text, 9)), minified


def bench(args):
    if shutil.which("node") is None:
        print("\njs: skipped: node is not on PATH", flush=True)
        return
    compiler = shutil.which("cc") or shutil.which("gcc")
    repeats = max(5, args.repeats)
    with tempfile.TemporaryDirectory(prefix="gpcompiler-bench-js-") as scratch:
        directory = Path(scratch)
        minifier = terser(directory)
        for name in ("monomial32", "sinc_ecg"):
            generated = import_module_file(ROOT / "generated" / f"{name}.py")
            t, y = curve(name, generated)
            js_project, js_release, js_privatize = js_times(name, t, y, repeats)
            py_seen, py_one, _ = python_times(generated, t, y, repeats)
            print(f"\njs: {name}, {t.size} samples -> {generated.COEF_DIM} coefficients, "
                  f"median of {repeats} rounds, OS entropy, node "
                  f"{subprocess.run(['node', '--version'], capture_output=True, text=True).stdout.strip()}"
                  f"\n  {'row':<40} {'time':>13}   {'reference':<34} {'time':>13}   "
                  f"{'ratio':>8}", flush=True)
            if compiler is not None:
                _, c_project, c_seen, _, c_privatize = c_times(compiler, directory, name, t, y,
                                                               CALLS[name], repeats)
                line("(a) JS projectAndPrivatize, B = 1", js_release,
                     "C project_and_privatize", c_seen)
                line("(a) JS project (no noise)", js_project, "C project", c_project)
                line("(a) JS privatize, one row", js_privatize, "C privatize, one row",
                     c_privatize)
            line("(a) JS projectAndPrivatize, B = 1", js_release,
                 "Python project_and_privatize", py_seen)
            line("(a) JS privatize, one row", js_privatize, "Python privatize, one row", py_one)
            size, zipped, minified = sizes(name, minifier, directory)
            shown = (f"minified (terser) {minified[0]:,} bytes, gzipped {minified[1]:,}"
                     if minified else "minified: not measured (npm could not install terser)")
            print(f"  (b) {name}.mjs: {size:,} bytes, gzipped {zipped:,}; {shown}", flush=True)


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    parser = argparse.ArgumentParser(prog="python -m benchmarks.js_target", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5, help="median of (at least 5)")
    bench(parser.parse_args())
