"""The CDF degree chosen privately (degree="auto", gpcompiler/cdf/degree.py) against the
64-bin histogram and every fixed candidate K, on real columns with declared public bounds
at epsilon = 1, delta = 1e-5: ``python -m gpcompiler.experiments.auto_degree [SEEDS]``
prints the Markdown table of docs/howto/choose-basis-and-budget.md; ``... auto_degree
constants`` the proxy's constants a, b and ``... auto_degree design [SEEDS]`` the design
table of the score's noise weight, both on synthetic distributions (the data the weight
was chosen on, before the real columns were looked at). Not private: the errors compare
releases with the true data, and "best fixed K" is chosen with hindsight.

Error: the Kolmogorov distance to the empirical CDF (cdf.distances), mean (and standard
deviation) over seeds; simulation j of column i draws from
numpy.random.default_rng([BASE_SEED, i, j]) for every method.
"""
import sys
from importlib import resources

import numpy

from .. import cdf
from ..cdf.degree import CANDIDATES, split_budget
from ..cdf.estimators import Statistics
from ..io.curves import read_column
from .protocol import simulation_rng

EPSILON, DELTA, BINS = 1.0, 1e-5, 64
WEIGHTS = (0, 1, 2, 4, 8, 16, 32)      # noise weights lambda tried on the design set
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
        cell = {method: f"{mean[method]:.4f} ± {numpy.std(v, ddof=1):.4f}"
                for method, v in found.items()}
        best = min((m for m in mean if m.startswith("K=")), key=mean.get)
        cells = [f"{name.split('.')[0]}.{column} [{lo:g}, {hi:g}], {data.size}",
                 f"{cell['auto']} ({int(numpy.median(chosen))} [{min(chosen)}, "
                 f"{max(chosen)}])", cell["histogram"]]
        cells += [f"**{cell[f'K={k}']}**" if f"K={k}" == best else cell[f"K={k}"]
                  for k in CANDIDATES]
        cells += [f"{mean['auto'] / mean[best]:.2f}", f"{mean['auto'] / mean['histogram']:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def design_data(n, rng):
    """The synthetic design set on [0, 1]: smooth, skewed, a narrow mode, atoms, rounded
    values, a gap and a steep start (the shapes the real columns might have)."""
    half = n // 2
    return {"beta(2, 5)": rng.beta(2, 5, n),
            "lognormal / 10": numpy.clip(rng.lognormal(0, 0.8, n) / 10, 0, 1),
            "narrow + wide normal": numpy.clip(numpy.concatenate(
                [rng.normal(0.3, 0.02, half), rng.normal(0.7, 0.1, n - half)]), 0, 1),
            "4 atoms": rng.choice([0.1, 0.25, 0.5, 0.8], n),
            "gamma rounded to 0.01": numpy.round(rng.gamma(3, 0.05, n), 2).clip(0, 1),
            "uniform with a gap": numpy.concatenate(
                [rng.uniform(0, 0.4, half), rng.uniform(0.45, 1, n - half)]),
            "exponential(0.05)": numpy.clip(rng.exponential(0.05, n), 0, 1)}


def design(seeds=4):
    """Per design data set (N = 3000, 30000), the Kolmogorov distance of the release at
    the noiseless best score's degree over the best fixed K, for each weight in WEIGHTS
    (and for the L2 score -sqrt(tail^2 + (K + 1) sigma^2)); the last rows the mean and max."""
    release = split_budget(EPSILON)[1]
    ratios = {w: [] for w in ("L2",) + WEIGHTS}
    lines = ["| data, N | best fixed K | " + " | ".join(f"lambda = {w}" for w in ratios) + " |",
             "|---" * (len(ratios) + 2) + "|"]
    for n in (3000, 30000):
        for name, x in design_data(n, numpy.random.default_rng(n)).items():
            ks = numpy.array([numpy.mean([cdf.distances(cdf.estimate(
                x, lo=0.0, hi=1.0, epsilon=release, delta=DELTA, degree=k, rng=j), x)[0]
                for j in range(seeds)]) for k in CANDIDATES])
            c = Statistics.from_data(x, lo=0.0, hi=1.0, degree=max(CANDIDATES)).sums / n
            k1 = numpy.array(CANDIDATES) + 1.0
            tails = numpy.array([(c[k + 1:] ** 2).sum() for k in CANDIDATES])
            unit = cdf.expected_l2_errors(0, n, release, DELTA)["direct"] ** 2  # sigma^2
            picks = {"L2": numpy.argmin(tails + k1 * unit)}
            picks.update({w: numpy.argmin(k1 * (tails + w * unit)) for w in WEIGHTS})
            row = [f"{name}, {n}", str(CANDIDATES[int(numpy.argmin(ks))])]
            for w, i in picks.items():
                ratios[w].append(ks[i] / ks.min())
                row.append(f"{CANDIDATES[i]} ({ks[i] / ks.min():.2f})")
            lines.append("| " + " | ".join(row) + " |")
    for label, f in (("mean", numpy.mean), ("max", numpy.max)):
        lines.append(f"| {label} | | " + " | ".join(f"{f(v):.3f}" for v in ratios.values())
                     + " |")
    return "\n".join(lines)


def proxy_constants(seeds=8):
    """(a, b): medians of the truncation-only Kolmogorov distance over sqrt(K + 1) tail_K
    (noiseless coefficients, post-processed; the design sets at N = 20000, K < Kmax) and of
    the noise-only one over sigma sqrt(K + 1) (uniform data, whose CDF is of degree 1, at
    N = 3000 and 50000, mean of ``seeds`` releases at epsilon 0.8)."""
    from ..cdf.estimators import CDFEstimate, _post_process, legendre_cdf
    reference, a, b = numpy.linspace(-1, 1, 2001), [], []
    for x in design_data(20000, numpy.random.default_rng(1)).values():
        c = Statistics.from_data(x, lo=0.0, hi=1.0, degree=max(CANDIDATES)).sums / x.size
        for k in CANDIDATES[:-1]:
            values = _post_process(legendre_cdf(c[:k + 1], reference))
            found = CDFEstimate("direct", 0.0, 1.0, (reference + 1) / 2, values, 0, 0, 1, DELTA)
            a.append(cdf.distances(found, x)[0] / numpy.sqrt((k + 1) * (c[k + 1:] ** 2).sum()))
    for n in (3000, 50000):
        x = numpy.linspace(0, 1, n)
        sigma = cdf.expected_l2_errors(0, n, 0.8, DELTA)["direct"]
        for k in CANDIDATES:
            b.append(numpy.mean([cdf.distances(cdf.estimate(
                x, lo=0, hi=1, epsilon=0.8, delta=DELTA, degree=k, rng=j), x)[0]
                for j in range(seeds)]) / (sigma * numpy.sqrt(k + 1)))
    return float(numpy.median(a)), float(numpy.median(b))


if __name__ == "__main__":
    if sys.argv[1:2] == ["constants"]:
        a, b = proxy_constants()
        print(f"a = {a:.3f}, b = {b:.3f}, (b/a)^2 = {(b / a) ** 2:.2f}")
    elif sys.argv[1:2] == ["design"]:
        print(design(int(sys.argv[2]) if len(sys.argv) > 2 else 4))
    else:
        print(table(int(sys.argv[1]) if len(sys.argv) > 1 else 20))
