"""Compile time against basis size, per family, as ratios measured in one run.

For each family, the spec with about 10 functions is compiled first and every larger
size is reported as a ratio to it (seconds are shown too, but on a shared machine only
the ratios mean something). The growth exponent is log(ratio)/log(m/m_10): closed-form
families should stay at or below 2. Compiles run in this process (no interpreter start-up).
Run: python benchmarks/compile.py [--sizes 10,100,250,500,1000] [--monomial 10,50,100,200]
"""
import argparse
import math
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


def compile_seconds(directory, family, m):
    """Seconds to compile one spec of ``family`` with about m functions, and its true size."""
    interval, options, size = FAMILIES[family]
    path = Path(directory) / f"{family}{m}.toml"
    path.write_text(f'name = "{family}{m}"\n[domain]\nintervals = [{interval}]\n'
                    f'[basis]\nfamily = {{ {options(m)} }}\n')
    start = time.perf_counter()
    compile_spec(path, directory)
    return time.perf_counter() - start, size(m)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10,100,250,500,1000",
                        help="basis sizes for legendre, fourier, hermite, sinc (default: %(default)s)")
    parser.add_argument("--monomial", default="10,50,100,200",
                        help="basis sizes (degree + 1) for monomials on [0, 100] "
                             "(default: %(default)s)")
    args = parser.parse_args()
    sizes = [int(v) for v in args.sizes.split(",")]
    print("| family | m | seconds | ratio to m = 10 | growth exponent |")
    print("|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as directory:
        for family in FAMILIES:
            family_sizes = [int(v) for v in args.monomial.split(",")] if family == "monomial" else sizes
            base, base_size = min(compile_seconds(directory, family, family_sizes[0])
                                  for _ in range(3))    # warm caches: the best of three
            print(f"| {family} | {base_size} | {base:.2f} | 1 | |", flush=True)
            for m in family_sizes[1:]:
                seconds, size = compile_seconds(directory, family, m)
                ratio = seconds / base
                exponent = math.log(ratio) / math.log(size / base_size) if ratio > 1 else 0.0
                print(f"| {family} | {size} | {seconds:.2f} | {ratio:.1f} | {exponent:.2f} |",
                      flush=True)


if __name__ == "__main__":
    main()
