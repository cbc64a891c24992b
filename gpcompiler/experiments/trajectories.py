"""Vessel trajectories (paper Sec. 5.3, Figs. 10, 15, 18): PrivFuncSeg with the 2-D linear
basis (Example 3, specs/trajectory_linear.toml) against the LY23 baseline.

Data: the bundled AIS trajectories of New York Harbor (1-7 Dec 2020; >= 100 points each),
projected to metres, time in minutes from each trip's start. Public domain: [0, T] with
T = 10080 minutes, the week the data covers, so no release depends on a trip's own
duration; a trajectory is zero after its last sample. Baseline: k in {N/10, N/5} for a
curve of N points and s in {k/20, k/10}, the paper's protocol; N is private, so the
baseline as the paper runs it is not private in our model (reported as the paper does).
"""
import math
from importlib import resources

from ..adaptive.curve import make_curve
from ..compiler.build import SHIPPED_SPECS, load as load_spec
from ..io.curves import bundled_trajectories
from .protocol import baseline_errors, checked_dataset, first, user_curves
from .seg_common import seg_errors

TITLE = "Vessel trajectories: PrivFuncSeg (2-D linear pieces) against the LY23 baseline"
PAPER = "Sec. 5.3, Figs. 10, 15 (CGP), 18 (median and quartiles)"
PAPER_METHODS = ("PrivFuncSeg",)
SPEC = "trajectory_linear.toml"
T = 10080.0
EPSILONS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1)
RHOS = (1.25e-08, 5e-08, 3.125e-07, 1.25e-06, 5e-06, 3.125e-05, 0.000125)   # Fig. 15 (eps^2/80)
UNIT = "m·√min"


def models(quick):
    """The paper's GP grid (Fig. 10) and CGP grid (Fig. 15); --quick: ends only."""
    pick = (lambda grid: [grid[0], grid[-1]]) if quick else list
    return {"GP": {"symbol": "ε", "unit": f"per {UNIT}", "budgets": pick(EPSILONS)},
            "CGP": {"symbol": "ρ", "unit": f"per ({UNIT})²", "budgets": pick(RHOS)}}


def settings(quick):
    return {"spec": f"specs/{SPEC}", "T_minutes": T, "beta": 0.1,
            "baseline": "k in {N/10, N/5} (N = the curve's number of samples: private), "
                        "s in {k/20, k/10}, each rounded down, k >= 2, s >= 1"}


def module():
    """The 2-D linear spec's module (compiled from the shipped spec, cached)."""
    return load_spec(SHIPPED_SPECS / SPEC)


def load(data, quick, curves, options):
    """The bundled AIS trajectories, or the user's CSV (t,x,y with optional curve id;
    t in minutes within [0, 10080])."""
    count = curves or (2 if quick else None)
    if data is None:
        found = bundled_trajectories()
        raw = resources.files("gpcompiler").joinpath("data/nyharbor_ais_2020-12-01_07.csv.gz").read_bytes()
        source = ("bundled AIS, New York Harbor 1-7 Dec 2020 "
                  "(gpcompiler/data/nyharbor_ais_2020-12-01_07.csv.gz)")
        found = first(found, count)
    else:
        (found, raw), source = user_curves(data, count), data
    dataset = checked_dataset(source, raw, found, (0.0, T))
    dataset.notes.update({"points": [int(t.size) for t in dataset.times],
                          "durations_minutes": [float(t[-1] - t[0]) for t in dataset.times]})
    return dataset


def baseline_plan(size):
    """The paper's (k, s) for a curve of ``size`` points: k in {N/10, N/5}, s in {k/20, k/10}."""
    plan = []
    for k_label, k in (("k=N/10", size // 10), ("k=N/5", size // 5)):
        k = max(k, 2)
        plan.append((k_label, k, [("s=k/20", max(k // 20, 1)), ("s=k/10", max(k // 10, 1))]))
    return plan


def simulate(index, t, y, domain, model, budgets, simulations, quick):
    """Normalized L2 errors (budget, simulation) of every method on one trajectory."""
    curve = make_curve(t, y, domain)
    key = "epsilon" if model == "GP" else "rho"
    errors = seg_errors(index, t, y, curve, module(), key, budgets, simulations, {"T": T})
    errors.update(baseline_errors(index, t, y, curve, key, budgets, simulations,
                                  baseline_plan(t.size)))
    return {"errors": errors, "extras": {"curve": index, "points": int(t.size),
                                         "norm": math.sqrt(curve.norm_squared())}}
