"""Synthetic Gaussian mixtures on [0, 100] (paper Sec. 5.2, 5.3, Figs. 8, 9, 12, 14, 16),
shared by the ``select`` and ``segments`` experiments.

50 curves, each a sum of 1-5 Gaussians (count uniform in 1..5, heights uniform in
[50, 150], centres in [10, 90], widths in [3, 15]), so values reach about 250 as in the
paper's Fig. 9, sampled at 501 evenly spaced points. Generated from a fixed seed; the
seed and the generator's parameters are in results.json. The baseline uses
k in {10, 20, 50, 100} with s = k/10 (Sec. 5.2).
"""
import json

import numpy

from ..curves import Curves
from .protocol import checked_dataset, user_curves

DOMAIN = (0.0, 100.0)
COUNT, SAMPLES, SEED = 50, 501, 2024
COMPONENTS, HEIGHTS, CENTRES, WIDTHS = (1, 5), (50.0, 150.0), (10.0, 90.0), (3.0, 15.0)
POINTS = (10, 20, 50, 100)
EPSILONS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1)
RHOS = (1e-07, 4e-07, 2.5e-06, 1e-05, 4e-05, 0.00025, 0.001)   # Fig. 14's grid (= 0.1 eps^2)
UNIT = "curve unit·√(t unit)"


def models(quick):
    """The paper's GP grid (Figs. 8, 12) and CGP grid (Figs. 14, 16); --quick: ends only."""
    pick = (lambda grid: [grid[0], grid[-1]]) if quick else list
    return {"GP": {"symbol": "ε", "unit": f"per {UNIT}", "budgets": pick(EPSILONS)},
            "CGP": {"symbol": "ρ", "unit": f"per ({UNIT})²", "budgets": pick(RHOS)}}


def mixtures(count=COUNT):
    """(t, list of curves) from the fixed seed."""
    rng = numpy.random.default_rng(SEED)
    t = numpy.linspace(*DOMAIN, SAMPLES)
    curves = []
    for _ in range(count):
        size = rng.integers(COMPONENTS[0], COMPONENTS[1] + 1)
        heights, centres = rng.uniform(*HEIGHTS, size), rng.uniform(*CENTRES, size)
        widths = rng.uniform(*WIDTHS, size)
        curves.append(numpy.sum(heights[:, None] * numpy.exp(
            -(t - centres[:, None]) ** 2 / (2 * widths[:, None] ** 2)), axis=0))
    return t, curves


def load(data, quick, curves):
    """The synthetic mixtures, or the user's CSV (t,y with optional curve id; t in [0, 100])."""
    count = curves or (2 if quick else COUNT)
    if data is None:
        t, ys = mixtures(count)
        found = Curves(tuple(f"mixture{i}" for i in range(count)), (t,) * count, tuple(ys), ("y",))
        generator = {"seed": SEED, "components": COMPONENTS, "heights": HEIGHTS,
                     "centres": CENTRES, "widths": WIDTHS, "samples": SAMPLES}
        raw = json.dumps(generator).encode()
        return checked_dataset("synthetic Gaussian mixtures", raw, found, DOMAIN,
                               {"generator": generator})
    found, raw = user_curves(data, curves or (2 if quick else None))
    return checked_dataset(data, raw, found, DOMAIN)


def baseline_plan(quick):
    """[(k label, k, [(s label, s)])]: k in {10, 20, 50, 100}, s = k/10 (--quick: k = 10, 20)."""
    return [(f"k={k}", k, [(f"s={k // 10}", k // 10)]) for k in (POINTS[:2] if quick else POINTS)]
