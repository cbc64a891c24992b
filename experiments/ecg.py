"""ECG (bundled MIT-BIH record 208, 30 windows of 10 s): 800 sinc functions versus LY23.

The paper's Sec. 5.1 experiment: Project-and-Privatize on {sinc(t - k)}, k = 1..800, for
curves on [0, 800] (time scaled by 80), against k privatized samples joined linearly
(k in {100, 200, 800}, sliding window s in {k/20, k/10} for the smoothed variant), the best
(k, s) per budget chosen with hindsight. Errors are L2 over [0, 800] (mV * sqrt(time unit)).
Run: python experiments/ecg.py [--seeds 10]
"""
import argparse
import math
import sys
from pathlib import Path

import numpy

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpcompiler import baseline_points  # noqa: E402
from gpcompiler.build import import_module_file  # noqa: E402
from gpcompiler.curves import bundled_ecg  # noqa: E402

BUDGETS = (1.0, 10.0, 100.0)
POINTS = (100, 200, 800)


def l2(values, truth, t):
    return math.sqrt(numpy.trapezoid((values - truth) ** 2, t))


def run(windows=30, seeds=10, progress=None):
    """{(method, epsilon): mean L2 error} and the chosen baseline settings."""
    module = import_module_file(ROOT / "generated" / "sinc_ecg.py")
    curves = [bundled_ecg(w) for w in range(windows)]
    t = curves[0].times[0]
    y = numpy.stack([c.values[0] for c in curves])
    table, settings = {}, {}
    coefficients = module.project(t, y)
    table["projection only", 0] = numpy.mean([l2(f, g, t) for f, g in zip(module.evaluate(coefficients, t), y)])
    for epsilon in BUDGETS:
        if progress:
            progress(f"epsilon = {epsilon}")
        errors = []
        for seed in range(seeds):
            noisy = module.privatize(coefficients, epsilon=epsilon, rng=numpy.random.default_rng(seed))
            errors += [l2(f, g, t) for f, g in zip(module.evaluate(noisy, t), y)]
        table["Project-and-Privatize (800 sinc)", epsilon] = numpy.mean(errors)
        for smoothed in (False, True):
            best = None
            for k in POINTS:
                for window in ((k // 20, k // 10) if smoothed else (None,)):
                    errors = [l2(baseline_points(t, curve, k, domain=(0.0, 800.0), epsilon=epsilon, window=window,
                                                 rng=numpy.random.default_rng(seed)).evaluate(t), curve, t)
                              for curve in y for seed in range(max(1, seeds // 5))]
                    if best is None or numpy.mean(errors) < best[0]:
                        best = (numpy.mean(errors), k, window)
            name = "Baseline (smoothed)" if smoothed else "Baseline"
            table[name, epsilon], settings[name, epsilon] = best[0], best[1:]
    return table, settings


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=10)
    args = parser.parse_args()
    table, settings = run(seeds=args.seeds, progress=lambda m: print(m, file=sys.stderr))
    print(f"projection alone (no noise): mean L2 error {table['projection only', 0]:.3f}")
    print("| method | " + " | ".join(f"eps = {e:g}" for e in BUDGETS) + " |")
    print("|---|" + "---|" * len(BUDGETS))
    for method in ("Project-and-Privatize (800 sinc)", "Baseline", "Baseline (smoothed)"):
        cells = []
        for epsilon in BUDGETS:
            cell = f"{table[method, epsilon]:.1f}"
            if (method, epsilon) in settings:
                k, window = settings[method, epsilon]
                cell += f" (k={k}{f', s={window}' if window else ''})"
            cells.append(cell)
        print(f"| {method} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
