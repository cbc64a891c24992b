"""The C target (issue 31; docs/reference/c.md) on monomial32 and sinc_ecg, 3600 samples per
curve (sinc_ecg: the bundled ECG window; monomial32: evenly spaced over its interval), as
ratios measured in one run, with OS entropy throughout:
(a) the C B = 1 secure release against the C bare contraction sum_s y_s A_s with the grid's
weights A given, timed in the same C driver (benchmarks/c_target.c): with the weights given
(NAME_project_weighted, then NAME_privatize of one row), with them computed
(NAME_project_and_privatize), and NAME_privatize of given coefficients;
(b) the C B = 1 release against the Python B = 1 call (project_and_privatize of one curve,
privatize of one row);
(c) the first call on a new grid against one on a seen grid: in C, the weights of a new grid
(NAME_projection_weights) and the release with them computed, against the release with them
given; Python with cache=True;
(d) the size of the protocol program built from generated/c/NAME.c and NAME_main.c (-O2),
stripped and not.
Each time is the median over --repeats rounds (at least 5) of the mean of a number of calls
(timeit-style). The C is built with the documented flags.
Run: python -m benchmarks --only c   (or python -m benchmarks.c_target [--repeats 5])
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import timeit
from pathlib import Path

import numpy

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpcompiler.compiler.build import import_module_file  # noqa: E402
from gpcompiler.io.curves import bundled_ecg  # noqa: E402

C_DIR = ROOT / "generated" / "c"
FLAGS = ["-std=c11", "-O2", "-ffp-contract=off", "-Wall", "-Wextra", "-pedantic", "-Werror"]
DRIVER = Path(__file__).resolve().parent / "c_target.c"
CALLS = {"monomial32": 20, "sinc_ecg": 3}   # calls per round of the C driver


def median_time(function, number, repeats):
    """Median over ``repeats`` rounds of the mean time of ``number`` calls."""
    return statistics.median(t / number for t in timeit.repeat(function, number=number,
                                                               repeat=repeats))


def curve(name, generated):
    """(t, y) of the benchmark's curve of 3600 samples."""
    if name == "sinc_ecg":
        window = bundled_ecg(0)
        return window.times[0], window.values[0]
    lo, hi = generated.curve_interval()
    t = numpy.linspace(lo, hi, 3600)
    return t, numpy.sin(3 * t / (hi - lo))


def c_times(compiler, directory, name, t, y, number, repeats):
    """The C driver's median times: bare, project, release with weights given, weights,
    release seen, release new, privatize."""
    program = directory / f"bench_{name}"
    subprocess.run([compiler, *FLAGS, "-D_POSIX_C_SOURCE=199309L", f"-DMODULE={name}",
                    f'-DHEADER="{name}.h"', f"-I{C_DIR}", str(DRIVER), str(C_DIR / f"{name}.c"),
                    "-o", str(program), "-lm"], check=True, capture_output=True, text=True)
    words = " ".join(map(float.hex, numpy.concatenate([numpy.ravel(t), numpy.ravel(y)])))
    done = subprocess.run([str(program), str(t.size), str(number), str(repeats)], input=words,
                          capture_output=True, text=True, check=True, timeout=3600)
    return [float.fromhex(w) for w in done.stdout.split()]


def binary_sizes(compiler, directory, name):
    """(bytes, stripped bytes) of the protocol program built with the documented flags."""
    program = directory / f"protocol_{name}"
    subprocess.run([compiler, *FLAGS, str(C_DIR / f"{name}.c"), str(C_DIR / f"{name}_main.c"),
                    "-o", str(program), "-lm"], check=True, capture_output=True, text=True)
    stripped = directory / f"protocol_{name}_stripped"
    subprocess.run([compiler, *FLAGS, "-s", str(C_DIR / f"{name}.c"),
                    str(C_DIR / f"{name}_main.c"), "-o", str(stripped), "-lm"], check=True,
                   capture_output=True, text=True)
    return program.stat().st_size, stripped.stat().st_size


def python_times(generated, t, y, repeats):
    """Python B = 1 (secure): project_and_privatize on a seen grid, privatize of one row,
    and the first call on a new grid (cache=True; the middle sample moved by 1e-9 of its
    gap per call)."""
    generated.project_and_privatize(t, y, epsilon=1.0)
    c = generated.project(t, y)
    seen = median_time(lambda: generated.project_and_privatize(t, y, epsilon=1.0), 20, repeats)
    one = median_time(lambda: generated.privatize(c, epsilon=1.0), 100, repeats)
    grids = iter(range(1, 10 ** 6))

    def new():
        grid = t.copy()
        k = t.size // 2
        grid[k] += next(grids) * 1e-9 * (t[k + 1] - t[k])
        generated.project_and_privatize(grid, y, epsilon=1.0, cache=True)
    return seen, one, median_time(new, 1, repeats)


def line(label, seconds, reference_label, reference):
    print(f"  {label:<40} {seconds * 1e3:10.4f} ms   {reference_label:<34} "
          f"{reference * 1e3:10.4f} ms   {seconds / reference:8.2f}", flush=True)


def bench(args):
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        print("\nc: skipped: no C compiler (cc or gcc) on PATH", flush=True)
        return
    repeats = max(5, args.repeats)
    with tempfile.TemporaryDirectory(prefix="gpcompiler-bench-c-") as scratch:
        directory = Path(scratch)
        for name in ("monomial32", "sinc_ecg"):
            generated = import_module_file(ROOT / "generated" / f"{name}.py")
            t, y = curve(name, generated)
            bare, project, weighted, weights, seen, new, privatize = c_times(compiler, directory, name, t, y,
                                                          CALLS[name], repeats)
            py_seen, py_one, py_new = python_times(generated, t, y, repeats)
            size, stripped = binary_sizes(compiler, directory, name)
            print(f"\nc: {name}, {t.size} samples -> {generated.COEF_DIM} coefficients, "
                  f"median of {repeats} rounds, OS entropy\n  {'row':<40} {'time':>13}   "
                  f"{'reference':<34} {'time':>13}   {'ratio':>8}", flush=True)
            line("(a) C release, B = 1, weights given", weighted, "C bare contraction y @ A",
                 bare)
            line("(a) C project_and_privatize, B = 1", seen, "C bare contraction y @ A", bare)
            line("(a) C project (no noise)", project, "C bare contraction y @ A", bare)
            line("(a) C privatize, one row", privatize, "C bare contraction y @ A", bare)
            line("(b) C project_and_privatize, B = 1", seen, "Python project_and_privatize",
                 py_seen)
            line("(b) C privatize, one row", privatize, "Python privatize, one row", py_one)
            line("(c) C weights of a new grid", weights, "C release, weights given", weighted)
            line("(c) C release, new grid per call", new, "C release, weights given", weighted)
            line("(c) C release, new grid per call", new, "C project_and_privatize, seen", seen)
            line("(c) Python release, new grid (cache)", py_new, "Python release, seen grid",
                 py_seen)
            print(f"  (d) protocol program, -O2: {size:,} bytes; stripped (-s): "
                  f"{stripped:,} bytes", flush=True)


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    parser = argparse.ArgumentParser(prog="python -m benchmarks.c_target", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5, help="median of (at least 5)")
    bench(parser.parse_args())
