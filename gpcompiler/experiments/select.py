"""PrivFuncSelect on Gaussian mixtures (paper Sec. 5.2, Figs. 8, 14): basis selection among
the monomials of degree <= 32 on [0, 100] (specs/monomial32.toml) against the LY23
baseline (k in {10, 20, 50, 100}, s = k/10). The release is a polynomial of degree <= 32,
so its distance to the piecewise-linear curve is exact with 17 Gauss-Legendre points per
sample interval."""
from pathlib import Path

from ..adaptive import priv_func_select
from ..adaptive.curve import make_curve
from ..build import load as load_spec
from . import mixtures
from .protocol import baseline_errors, l2_distance, simulation_rng

TITLE = "Gaussian mixtures: PrivFuncSelect (monomials of degree <= 32) against the LY23 baseline"
PAPER = "Sec. 5.2, Figs. 8, 14 (CGP)"
PAPER_METHODS = ("PrivFuncSelect",)
BASELINES = ("Baseline", "Baseline (smoothed)")
METRIC = "l2"
METRIC_LABEL = "L2 error / ||q||"
METRIC_UNIT = "relative to ||q||"
SPEC = "monomial32.toml"
models = mixtures.models


def settings(quick):
    return {"spec": f"specs/{SPEC}", "beta": 0.1,
            "baseline": [[k, [s for _, s in w]] for _, k, w in mixtures.baseline_plan(quick)]}


def load(data, quick, curves, options):
    return mixtures.load(data, quick, curves)


def simulate(index, t, y, domain, model, budgets, simulations, quick):
    """Normalized L2 errors (budget, simulation) of every method on one curve, and the
    number of basis functions PrivFuncSelect chose."""
    module = load_spec(Path(__file__).resolve().parents[2] / "specs" / SPEC)
    curve = make_curve(t, y, domain)
    norm = curve.norm_squared() ** 0.5
    key = "epsilon" if model == "GP" else "rho"
    rows, sizes = [], []
    for budget in budgets:
        results = [priv_func_select(t, y, module, rng=simulation_rng(index, j), **{key: budget})
                   for j in range(simulations)]
        rows.append([l2_distance(r.evaluate, curve, nodes=17) / norm for r in results])
        sizes.append([len(r.basis_indices) for r in results])
    errors = {"PrivFuncSelect": {"": rows}}
    errors.update(baseline_errors(index, t, y, curve, key, budgets, simulations,
                                  mixtures.baseline_plan(quick)))
    return {"errors": errors, "extras": {"curve": index, "selected_basis_size": sizes}}
