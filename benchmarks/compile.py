"""Compile time against basis size, per family, as ratios measured in one run.

First the issue-22 row: monomials of degree --degree on [0, 100] against the Legendre
family of the same degree on [-1, 1] (the floor: a diagonal Gram matrix and an identity
change of basis), each compile in a fresh interpreter so that its peak resident memory
(ru_maxrss, beyond the interpreter with gpcompiler imported) is its own; the two are timed
in turn, best of --repeats, and the monomial growth exponent is log(t_m/t_(m/2))/log(2).
Then, per family, the spec with about 10 functions is compiled first and every larger
size is reported as a ratio to it (seconds are shown too, but on a shared machine only
the ratios mean something). The growth exponent is log(ratio)/log(m/m_10): closed-form
families should stay at or below 2. Compiles run in this process (no interpreter start-up).
Run: python benchmarks/compile.py [--degree 999] [--sizes 10,100,250,500,1000]
     [--monomial 10,50,100,200] [--before CHECKOUT] [--no-table]
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpcompiler.compiler.build import compile_spec  # noqa: E402

FAMILIES = {
    "legendre": ('["-1", "1"]', lambda m: f'name = "legendre", degree = {m - 1}', lambda m: m),
    "fourier": ('["-pi", "pi"]', lambda m: f'name = "fourier", order = {m // 2}',
                lambda m: 2 * (m // 2) + 1),
    "hermite": ('["-oo", "oo"]', lambda m: f'name = "hermite", degree = {m - 1}', lambda m: m),
    "sinc": ('["-oo", "oo"]', lambda m: f'name = "sinc", count = {m}', lambda m: m),
    "monomial": ('["0", "100"]', lambda m: f'name = "monomial", degree = {m - 1}', lambda m: m),
}

_CHILD = """
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from gpcompiler.compiler.build import compile_spec
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
compile_spec(sys.argv[2], sys.argv[3])
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": seconds, "peak_kb": peak, "base_kb": before}))
"""


def write_spec(directory, family, m):
    """The spec file of ``family`` with about m functions, and its true size."""
    interval, options, size = FAMILIES[family]
    path = Path(directory) / f"{family}{m}.toml"
    path.write_text(f'name = "{family}{m}"\n[domain]\nintervals = [{interval}]\n'
                    f'[basis]\nfamily = {{ {options(m)} }}\n')
    return path, size(m)


def compile_seconds(directory, family, m):
    """Seconds to compile one spec of ``family`` with about m functions, and its true size."""
    path, size = write_spec(directory, family, m)
    start = time.perf_counter()
    compile_spec(path, directory)
    return time.perf_counter() - start, size


def child_compile(directory, family, m, root=ROOT):
    """(seconds, peak MB beyond the imports) of one compile in a fresh interpreter, with the
    gpcompiler package of the checkout ``root``."""
    path, _ = write_spec(directory, family, m)
    out = subprocess.run([sys.executable, "-c", _CHILD, str(root), str(path), directory],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "GPCOMPILER_TIME_LIMIT": "3600"})
    result = json.loads(out.stdout.splitlines()[-1])
    return result["seconds"], (result["peak_kb"] - result["base_kb"]) / 1024


def ratio_rows(directory, degree, repeats, before=None):
    """Monomial degree ``degree`` (and half of it) against Legendre of the same degree;
    with ``before`` (another checkout), its monomial compile too, in the same rounds."""
    m, half = degree + 1, (degree + 1) // 2
    runs = {("legendre", m): [], ("monomial", m): [], ("monomial", half): []}
    if before:
        runs["before", m] = []
    for _ in range(repeats):          # in turn, so that the load weighs on all alike
        for family, size in runs:
            runs[family, size].append(
                child_compile(directory, "monomial", size, before) if family == "before"
                else child_compile(directory, family, size))
    best = {key: (min(s for s, _ in v), max(p for _, p in v)) for key, v in runs.items()}
    floor, floor_mb = best["legendre", m]
    seconds, peak = best["monomial", m]
    growth = math.log(seconds / best["monomial", half][0]) / math.log(m / half)
    print(f"| row | seconds | floor: legendre m = {m} | ratio | peak MB (floor) | "
          f"growth exponent |\n|---|---:|---:|---:|---:|---:|")
    print(f"| monomial m = {half} on [0, 100] | {best['monomial', half][0]:.2f} | "
          f"{floor:.2f} | {best['monomial', half][0] / floor:.2f} | "
          f"{best['monomial', half][1]:.0f} ({floor_mb:.0f}) | |")
    print(f"| monomial m = {m} on [0, 100] | {seconds:.2f} | {floor:.2f} | "
          f"{seconds / floor:.2f} | {peak:.0f} ({floor_mb:.0f}) | {growth:.2f} |", flush=True)
    if before:
        print(f"| monomial m = {m}, {before} | {best['before', m][0]:.2f} | {floor:.2f} | "
              f"{best['before', m][0] / floor:.2f} | {best['before', m][1]:.0f} | |")


def table(directory, sizes, monomial_sizes):
    print("\n| family | m | seconds | ratio to m = 10 | growth exponent |")
    print("|---|---:|---:|---:|---:|")
    for family in FAMILIES:
        family_sizes = monomial_sizes if family == "monomial" else sizes
        base, base_size = min(compile_seconds(directory, family, family_sizes[0])
                              for _ in range(3))    # warm caches: the best of three
        print(f"| {family} | {base_size} | {base:.2f} | 1 | |", flush=True)
        for m in family_sizes[1:]:
            seconds, size = compile_seconds(directory, family, m)
            ratio = seconds / base
            exponent = math.log(ratio) / math.log(size / base_size) if ratio > 1 else 0.0
            print(f"| {family} | {size} | {seconds:.2f} | {ratio:.1f} | {exponent:.2f} |",
                  flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--degree", type=int, default=999,
                        help="degree of the monomial against Legendre row (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=2,
                        help="best of, for that row (default: %(default)s)")
    parser.add_argument("--sizes", default="10,100,250,500,1000",
                        help="basis sizes for legendre, fourier, hermite, sinc "
                             "(default: %(default)s)")
    parser.add_argument("--monomial", default="10,50,100,200",
                        help="basis sizes (degree + 1) for monomials on [0, 100] "
                             "(default: %(default)s)")
    parser.add_argument("--before", metavar="CHECKOUT",
                        help="also compile the monomial with this checkout's gpcompiler, in "
                             "the same rounds (default: none)")
    parser.add_argument("--no-table", action="store_true",
                        help="only the monomial against Legendre row")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    with tempfile.TemporaryDirectory() as directory:
        ratio_rows(directory, args.degree, args.repeats, args.before)
        if not args.no_table:
            table(directory, [int(v) for v in args.sizes.split(",")],
                  [int(v) for v in args.monomial.split(",")])


if __name__ == "__main__":
    main()
