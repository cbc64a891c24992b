"""DP CDF estimation (second paper; README "DP CDF estimation"): the four estimators --
moments (the paper's PP), direct coefficients, histogram queries (HQ), adaptive quantiles
(AQ) -- over epsilon and the degree K, with delta = 1e-5.

Data: the bundled CPS 1988 weekly wages (public bounds [0, 2500] USD) or one column of the
user's CSV with the user's public bounds --lo/--hi. Error: the L2 distance between the
private and the empirical CDF on the mapped [-1, 1] scale (and the Kolmogorov distance in
results.json), per simulation; HQ and AQ do not depend on K.
"""
import gzip
from importlib import resources

from .. import cdf as estimators
from ..io.curves import read_column
from ..errors import DataError
from .protocol import Dataset, sha256_of, simulation_rng

TITLE = "DP CDF estimation: moments (PP), direct, histogram and adaptive-quantile estimators"
PAPER = "the DP-CDF paper's estimator (moments) and its baselines HQ and AQ; 'direct' is ours"
PAPER_METHODS = ("moments", "direct")
BASELINES = ("histogram", "adaptive-quantiles")
METRIC = "l2"
METRIC_LABEL = "L2 distance to the empirical CDF"
METRIC_UNIT = "on the [-1, 1] scale"
EPSILONS = (0.1, 0.2, 0.5, 1.0, 2.0)
DEGREES = (5, 10, 20)
DELTA = 1e-5
BUNDLED_BOUNDS = (0.0, 2500.0)


def models(quick):
    pick = (lambda grid: [grid[0], grid[-1]]) if quick else list
    return {"DP": {"symbol": "ε", "unit": f"(ε, δ = {DELTA:g})-DP", "budgets": pick(EPSILONS)}}


def degrees(quick):
    return DEGREES[:2] if quick else DEGREES


def settings(quick):
    return {"delta": DELTA, "degrees": list(degrees(quick)), "histogram_bins": 64,
            "adaptive_quantile_steps": 32}


def load(data, quick, curves, options):
    """One "curve": the column's values, with the public bounds (lo, hi)."""
    if data is None:
        values = read_column("bundled:cps1988", "wage")
        raw = resources.files("gpcompiler").joinpath("data/AER__CPS1988.csv.gz").read_bytes()
        raw, source = gzip.decompress(raw), "bundled CPS 1988 weekly wages (column wage)"
        bounds = (options.get("lo") if options.get("lo") is not None else BUNDLED_BOUNDS[0],
                  options.get("hi") if options.get("hi") is not None else BUNDLED_BOUNDS[1])
    else:
        if options.get("lo") is None or options.get("hi") is None:
            raise DataError("--data needs the public bounds --lo and --hi")
        column = options.get("column") or "wage"
        values = read_column(data, column)
        with open(data, "rb") as handle:
            raw = handle.read()
        source, bounds = f"{data} (column {column})", (options["lo"], options["hi"])
    return Dataset(source, sha256_of(raw), ("data",), (values,), (None,), tuple(map(float, bounds)),
                   {"records": int(values.size)})


def simulate(index, data, _, bounds, model, budgets, simulations, quick):
    """L2 distances (budget, simulation) of every estimator and K; Kolmogorov in extras."""
    errors, kolmogorov = {}, {}
    for method in estimators.METHODS:
        errors[method], kolmogorov[method] = {}, {}
        for degree in degrees(quick) if method in PAPER_METHODS else degrees(quick)[:1]:
            setting = f"K={degree}" if method in PAPER_METHODS else ""
            rows, ks = [], []
            for epsilon in budgets:
                found = [estimators.distances(estimators.estimate(
                    data, lo=bounds[0], hi=bounds[1], epsilon=epsilon, delta=DELTA, degree=degree,
                    method=method, rng=simulation_rng(index, j)), data) for j in range(simulations)]
                ks.append([float(k) for k, _ in found])
                rows.append([float(l2) for _, l2 in found])
            errors[method][setting], kolmogorov[method][setting] = rows, ks
    return {"errors": errors, "extras": {"kolmogorov": kolmogorov}}
