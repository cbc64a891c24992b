"""Synthetic Gaussian mixtures on [0, 100] (paper Sec. 5.2, 5.3, Figs. 8, 9, 12, 14, 16),
shared by the ``select`` and ``segments`` experiments.

The generator is the authors' (``genRandomFunc`` in ``Synthetic.py`` and
``SyntheticAdapt.py`` of the public repository Timothy-SHU/Function-Privatization-in-the-
Local-Model), re-implemented here so our tables sit beside their published means
(``published.py``): Python's ``random`` seeded 42; for each of 50 curves a count
m = randint(1, 5), then m Gaussians a exp(-(t - c)^2 / (2 s^2)) with a = randint(50, 500),
c = randint(0, 100), s = randint(2, 16), drawn in that order. The authors integrate the
function itself; we sample it at 2001 evenly spaced points of [0, 100] (the curve is their
piecewise-linear interpolant). The baseline uses k in {10, 20, 50, 100} with s = k/10
(Sec. 5.2).
"""
import json
import random

import numpy

from ..io.curves import Curves
from .protocol import checked_dataset, user_curves

DOMAIN = (0.0, 100.0)
COUNT, SAMPLES, SEED = 50, 2001, 42
COMPONENTS, HEIGHTS, CENTRES, WIDTHS = (1, 5), (50, 500), (0, 100), (2, 16)
SOURCE = ("the authors' generator (genRandomFunc, Synthetic.py, "
          "Timothy-SHU/Function-Privatization-in-the-Local-Model), seed 42")
PUBLISHED_SOURCE = "results/Synth.zip of the same repository, 30 runs per curve"
POINTS = (10, 20, 50, 100)
EPSILONS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1)
RHOS = (1e-07, 4e-07, 2.5e-06, 1e-05, 4e-05, 0.00025, 0.001)   # the authors' rho = eps^2/10
UNIT = "curve unit·√(t unit)"


def models(quick):
    """The paper's GP grid (Figs. 8, 12) and CGP grid (Figs. 14, 16); --quick: ends only."""
    pick = (lambda grid: [grid[0], grid[-1]]) if quick else list
    return {"GP": {"symbol": "ε", "unit": f"per {UNIT}", "budgets": pick(EPSILONS)},
            "CGP": {"symbol": "ρ", "unit": f"per ({UNIT})²", "budgets": pick(RHOS)}}


def parameters(count=COUNT, seed=SEED):
    """[[(height, centre, width), ...] per curve], drawn as the authors' genRandomFunc."""
    draw = random.Random(seed)
    found = []
    for _ in range(count):
        size = draw.randint(*COMPONENTS)
        found.append([(draw.randint(*HEIGHTS), draw.randint(*CENTRES), draw.randint(*WIDTHS))
                      for _ in range(size)])
    return found


def mixtures(count=COUNT):
    """(t, list of curves): the first ``count`` of the authors' 50 at the SAMPLES times."""
    t = numpy.linspace(*DOMAIN, SAMPLES)
    curves = []
    for components in parameters(count):
        height, centre, width = (numpy.array(v, dtype=float)[:, None] for v in zip(*components))
        curves.append(numpy.sum(height * numpy.exp(-(t - centre) ** 2 / (2 * width ** 2)), axis=0))
    return t, curves


def load(data, quick, curves):
    """The authors' mixtures, or the user's CSV (t,y with optional curve id; t in [0, 100])."""
    count = curves or (2 if quick else COUNT)
    if data is None:
        t, ys = mixtures(count)
        found = Curves(tuple(f"mixture{i}" for i in range(count)), (t,) * count, tuple(ys), ("y",))
        generator = {"source": SOURCE, "seed": SEED, "components": COMPONENTS,
                     "heights": HEIGHTS, "centres": CENTRES, "widths": WIDTHS,
                     "samples": SAMPLES}
        raw = json.dumps(generator).encode()
        return checked_dataset("synthetic Gaussian mixtures: " + SOURCE, raw, found, DOMAIN,
                               {"generator": generator})
    found, raw = user_curves(data, curves or (2 if quick else None))
    return checked_dataset(data, raw, found, DOMAIN)


def published(dataset, models):
    """The authors' published means at our budgets ({model: {method: [mean per budget]}})
    when the data is all 50 of their curves; None otherwise (other curves, --curves)."""
    from .published import PUBLISHED
    if dataset.notes.get("generator", {}).get("seed") != SEED or len(dataset.ids) != COUNT:
        return None
    grids = {"GP": EPSILONS, "CGP": RHOS}
    return {model: {method: [values[grids[model].index(b)] for b in grid["budgets"]]
                    for method, values in PUBLISHED[model].items()}
            for model, grid in models.items()}


def baseline_plan(quick):
    """[(k label, k, [(s label, s)])]: k in {10, 20, 50, 100}, s = k/10 (--quick: k = 10, 20)."""
    return [(f"k={k}", k, [(f"s={k // 10}", k // 10)]) for k in (POINTS[:2] if quick else POINTS)]
