"""Vessel trajectories (bundled AIS, New York Harbor): PrivFuncSeg versus the LY23 baseline.

The paper's Sec. 5.3 experiment on real trajectories: PrivFuncSeg with the linear local
basis (Example 3, n = 2) against k privatized points joined linearly, with and without
sliding-window smoothing, the best (k, s) per budget chosen with hindsight as in the paper.
Every trajectory lives on the public domain [0, T], T = 10080 minutes (the week the data
covers; a curve is zero after its last sample), so no release depends on a trip's duration.
Errors are RMS distances in metres: the L2 error over [0, T] / sqrt(trip duration). GP
budgets are per metre * sqrt(minute). Run: python experiments/trajectories.py [--curves 30] [--seeds 5]
"""
import argparse
import math
import sys
from pathlib import Path

import numpy

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpcompiler import baseline_points, priv_func_seg  # noqa: E402
from gpcompiler.build import import_module_file  # noqa: E402
from gpcompiler.curves import bundled_trajectories  # noqa: E402

BUDGETS = (0.01, 0.1, 1.0)
DOMAIN_MINUTES = 10080.0
POINTS = (10, 20, 50, 100, 200)


def rms_error(result, t, y):
    inside = numpy.linspace(t[0], t[-1], 4001)
    grid = numpy.concatenate([inside, numpy.linspace(t[-1], DOMAIN_MINUTES, 4001)[1:]])
    truth = numpy.stack([numpy.interp(grid, t, y[:, r], right=0.0) for r in range(2)], axis=1)
    truth[4001:] = 0.0
    squared = numpy.sum((result.evaluate(grid) - truth) ** 2, axis=1)
    return math.sqrt(numpy.trapezoid(squared, grid) / (t[-1] - t[0]))


def run(curves=30, seeds=5, progress=None):
    """{(method, epsilon): mean RMS metres} and the chosen baseline (k, s) per budget."""
    module = import_module_file(ROOT / "generated" / "trajectory_linear.py")
    data = bundled_trajectories()
    chosen = list(zip(data.times, data.values))[:curves]
    table, settings = {}, {}
    for epsilon in BUDGETS:
        if progress:
            progress(f"epsilon = {epsilon}")
        for continuous in (False, True):
            errors = [rms_error(priv_func_seg(t, y, module, epsilon=epsilon, continuous=continuous,
                                              rng=numpy.random.default_rng(seed),
                                              T=DOMAIN_MINUTES), t, y)
                      for t, y in chosen for seed in range(seeds)]
            table["PrivFuncSeg" + (" (continuous)" if continuous else ""), epsilon] = numpy.mean(errors)
        for smoothed in (False, True):
            best = None
            for k in POINTS:
                window = max(2, k // 10) if smoothed else None
                errors = [rms_error(baseline_points(t, y, k, domain=(0.0, DOMAIN_MINUTES),
                                                    epsilon=epsilon, window=window,
                                                    rng=numpy.random.default_rng(seed)), t, y)
                          for t, y in chosen for seed in range(seeds)]
                if best is None or numpy.mean(errors) < best[0]:
                    best = (numpy.mean(errors), k, window)
            name = "Baseline (smoothed)" if smoothed else "Baseline"
            table[name, epsilon] = best[0]
            settings[name, epsilon] = best[1:]
    return table, settings


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--curves", type=int, default=30)
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    table, settings = run(args.curves, args.seeds, progress=lambda m: print(m, file=sys.stderr))
    methods = ["PrivFuncSeg", "PrivFuncSeg (continuous)", "Baseline", "Baseline (smoothed)"]
    print("| method | " + " | ".join(f"eps = {e:g}" for e in BUDGETS) + " |")
    print("|---|" + "---|" * len(BUDGETS))
    for method in methods:
        cells = []
        for epsilon in BUDGETS:
            cell = f"{table[method, epsilon]:.0f} m"
            if (method, epsilon) in settings:
                k, window = settings[method, epsilon]
                cell += f" (k={k}{f', s={window}' if window else ''})"
            cells.append(cell)
        print(f"| {method} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
