"""ECG (paper Sec. 5.1, Figs. 6, 13, 17): Project-and-Privatize on 800 sinc functions
against the LY23 baseline and its smoothed version.

Data: the bundled MIT-BIH record 208 (lead MLII) in microvolts, resampled from 360 Hz to
100 Hz (scipy.signal.resample_poly), cut into 10-second windows, time scaled by 80 so a
window's samples are at 0.8, 1.6, ..., 800, ending on the last sinc centre as the
authors' ECG.py grid does (linspace(0.8, 800, 1000)); the curve interval of
specs/sinc_ecg.toml is [0, 800]. Baseline: k in {100, 200, 800} points, smoothed with
s in {k/20, k/10}; k is public (it does not depend on the curve). The sinc release lives on R: its error is the L2(R) distance to q (zero
outside [0, 800]), by Pythagoras ||f~ - q||^2 = ||c~ - c||^2 + ||q - Pq||^2 with
||q - Pq||^2 = ||q||^2 - ||c||^2 (orthonormal basis).
"""
import io
import math
from importlib import resources

import numpy

from ..adaptive.curve import make_curve
from ..compiler.build import SHIPPED_SPECS, load as load_spec
from ..io.curves import Curves
from .protocol import (baseline_errors, checked_dataset, first, largest_bound, simulation_rng,
                       user_curves)

TITLE = "ECG: Project-and-Privatize (800 sinc functions) against the LY23 baseline"
PAPER = "Sec. 5.1, Figs. 6, 13 (CGP), 17 (median and quartiles)"
PAPER_METHODS = ("Project-and-Privatize",)
SPEC = "sinc_ecg.toml"
RATE, WINDOW_SECONDS, TIME_SCALE = 100, 10, 80.0
POINTS = (100, 200, 800)
EPSILONS = (0.1, 0.2, 0.5, 1.0, 2.0)
RHOS = (8e-05, 0.00032, 0.002, 0.008, 0.032)     # Fig. 13's grid (= 0.008 eps^2)


def models(quick):
    """The paper's GP grid (Fig. 6) and CGP grid (Fig. 13); --quick: smallest and largest."""
    pick = (lambda grid: [grid[0], grid[-1]]) if quick else list
    unit = "µV·√(time unit)"
    return {"GP": {"symbol": "ε", "unit": f"per {unit}", "budgets": pick(EPSILONS)},
            "CGP": {"symbol": "ρ", "unit": f"per ({unit})²", "budgets": pick(RHOS)}}


def settings(quick):
    return {"spec": f"specs/{SPEC}", "basis_size": 800, "baseline_points": list(_points(quick)),
            "baseline_windows": "s in {k/20, k/10}",
            "units": "µV, time scaled by 80 (10 s -> 800)",
            "resampling": "scipy.signal.resample_poly(x, 5, 18): 360 Hz -> 100 Hz"}


def _points(quick):
    return POINTS[:1] if quick else POINTS


def module():
    """The sinc module (compiled from the shipped spec, cached)."""
    return load_spec(SHIPPED_SPECS / SPEC)


def bundled_windows():
    """(raw bytes, times, list of 10-second windows in µV at 100 Hz)."""
    from scipy.signal import resample_poly
    raw = resources.files("gpcompiler").joinpath("data/mitbih_record208_360hz.npz").read_bytes()
    counts = numpy.load(io.BytesIO(raw))["ecg"].astype(float)
    microvolts = resample_poly((counts - 1024.0) * 5.0, 5, 18)      # (x - 1024)/200 mV
    size = RATE * WINDOW_SECONDS
    windows = [microvolts[i * size:(i + 1) * size] for i in range(microvolts.size // size)]
    return raw, numpy.arange(1, size + 1) * (TIME_SCALE / RATE), windows


def load(data, quick, curves, options):
    """The bundled windows, or the user's CSV (t,y with optional curve id; t in [0, 800])."""
    domain = (0.0, 800.0)
    if data is None:
        raw, t, windows = bundled_windows()
        found = Curves(tuple(f"record208_w{i}" for i in range(len(windows))), (t,) * len(windows),
                       tuple(windows), ("uV",))
        source = "bundled MIT-BIH record 208 (gpcompiler/data/mitbih_record208_360hz.npz)"
        found = first(found, curves or (2 if quick else None))
    else:
        (found, raw), source = user_curves(data, curves or (2 if quick else None)), data
    return checked_dataset(source, raw, found, domain)


def simulate(index, t, y, domain, model, budgets, simulations, quick):
    """Normalized L2 errors (budget, simulation) of every method on one curve."""
    sinc = module()
    curve = make_curve(t, y, domain)
    norm2 = curve.norm_squared()
    c = sinc.project(t, y)
    residual2 = max(norm2 - float(c @ c), 0.0)
    key = "epsilon" if model == "GP" else "rho"
    errors = {PAPER_METHODS[0]: {"": []}}
    for budget in budgets:
        row = []
        for j in range(simulations):
            noise = sinc.privatize(c, rng=simulation_rng(index, j), **{key: budget},
                                   bound=largest_bound(key, budget)) - c
            row.append(math.sqrt((float(noise @ noise) + residual2) / norm2))
        errors[PAPER_METHODS[0]][""].append(row)
    errors.update(baseline_errors(index, t, y, curve, key, budgets, simulations,
                                  [(f"k={k}", k, [(f"s={w}", w) for w in (k // 20, k // 10)])
                                   for k in _points(quick)]))
    return {"errors": errors, "extras": {"curve": index,
                                         "projection_error": math.sqrt(residual2 / norm2)}}

