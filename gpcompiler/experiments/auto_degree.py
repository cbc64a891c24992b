"""The CDF degree chosen privately (degree="auto", gpcompiler/cdf/degree.py) against the
64-bin histogram and every fixed candidate K, on real columns with declared public bounds
at epsilon = 1, delta = 1e-5: ``python -m gpcompiler.experiments.auto_degree [SEEDS]``
prints the Markdown table of docs/choosing.md. Not private: the errors compare releases
with the true data, and "best fixed K" is chosen with hindsight.

Error: the Kolmogorov distance to the empirical CDF (cdf.distances), mean over seeds;
simulation j of column i draws from numpy.random.default_rng([BASE_SEED, i, j]) for
every method.
"""
import sys
from importlib import resources

import numpy

from .. import cdf
from ..cdf.degree import CANDIDATES
from ..io.curves import read_column
from .protocol import simulation_rng

EPSILON, DELTA, BINS = 1.0, 1e-5, 64
COLUMNS = (   # (file in gpcompiler/data, column, public lo, public hi); PROVENANCE.md
    ("AER__CPS1988.csv.gz", "wage", 0.0, 2500.0),
    ("AER__CPS1988.csv.gz", "wage", 0.0, 20000.0),
    ("ggplot2__diamonds.csv.gz", "price", 0.0, 20000.0),
    ("ggplot2__diamonds.csv.gz", "carat", 0.0, 6.0),
    ("ISLR__Wage.csv.gz", "wage", 0.0, 350.0),
)


def column_values(name, column):
    """One column of a bundled data file."""
    with resources.as_file(resources.files("gpcompiler").joinpath(f"data/{name}")) as path:
        return read_column(str(path), column)


def errors(index, data, lo, hi, seeds):
    """{method: [Kolmogorov distance per seed]} and the degrees auto chose."""
    def run(**options):
        found = [cdf.estimate(data, lo=lo, hi=hi, epsilon=EPSILON, delta=DELTA,
                              rng=simulation_rng(index, j), **options) for j in range(seeds)]
        return found, [cdf.distances(f, data)[0] for f in found]
    found = {"histogram": run(method="histogram", bins=BINS)[1]}
    for k in CANDIDATES:
        found[f"K={k}"] = run(degree=k)[1]
    releases, found["auto"] = run(degree="auto")
    return found, [r.degree for r in releases]


def table(seeds=20):
    """The Markdown table: one row per column."""
    header = ["column [public bounds], N", "auto (K chosen: median [min, max])",
              f"histogram ({BINS} bins)"] + [f"K={k}" for k in CANDIDATES] + \
        ["auto / best fixed K", "auto / histogram"]
    lines = ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    for index, (name, column, lo, hi) in enumerate(COLUMNS):
        data = column_values(name, column)
        found, chosen = errors(index, data, lo, hi, seeds)
        mean = {method: float(numpy.mean(v)) for method, v in found.items()}
        best = min((m for m in mean if m.startswith("K=")), key=mean.get)
        cells = [f"{name.split('.')[0]}.{column} [{lo:g}, {hi:g}], {data.size}",
                 f"{mean['auto']:.4f} ({int(numpy.median(chosen))} [{min(chosen)}, "
                 f"{max(chosen)}])", f"{mean['histogram']:.4f}"]
        cells += [f"**{mean[f'K={k}']:.4f}**" if f"K={k}" == best else f"{mean[f'K={k}']:.4f}"
                  for k in CANDIDATES]
        cells += [f"{mean['auto'] / mean[best]:.2f}", f"{mean['auto'] / mean['histogram']:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(int(sys.argv[1]) if len(sys.argv) > 1 else 20))
