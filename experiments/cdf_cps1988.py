"""DP CDF of CPS 1988 weekly wages: mean Kolmogorov and L2 distances over seeds.

Run: python experiments/cdf_cps1988.py [--seeds 50]. Prints the Markdown table in README.md.
Public bounds [0, 2500] USD (0.8% of wages above are clipped); epsilon = 1, delta = 1e-5.
"""
import argparse
import sys
from pathlib import Path

import numpy

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gpcompiler import cdf  # noqa: E402
from gpcompiler.curves import read_column  # noqa: E402

LO, HI, EPSILON, DELTA = 0.0, 2500.0, 1.0, 1e-5


def table(seeds, degrees=(5, 10, 20), progress=None):
    """{(degree, method): (mean Kolmogorov, mean L2)} over ``seeds`` seeds."""
    wages = read_column("bundled:cps1988", "wage")
    results = {}
    for degree in degrees:
        for method in cdf.METHODS:
            if progress:
                progress(f"K = {degree}, {method}")
            values = [cdf.distances(cdf.estimate(wages, lo=LO, hi=HI, epsilon=EPSILON, delta=DELTA,
                                                 degree=degree, method=method,
                                                 rng=numpy.random.default_rng(seed)), wages)
                      for seed in range(seeds)]
            results[degree, method] = tuple(numpy.mean(values, axis=0))
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=50)
    args = parser.parse_args()
    results = table(args.seeds, progress=lambda m: print(m, file=sys.stderr))
    print(f"| K | method | mean Kolmogorov | mean L2 |  ({args.seeds} seeds)")
    print("|---|---|---|---|")
    for (degree, method), (kolmogorov, l2) in results.items():
        print(f"| {degree} | {method} | {kolmogorov:.4f} | {l2:.4f} |")


if __name__ == "__main__":
    main()
