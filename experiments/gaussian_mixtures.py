"""Synthetic Gaussian mixtures on [0, 100]: PrivFuncSelect (degree <= 32 monomials) versus LY23.

The paper's Sec. 5.2 experiment: 20 random two-component Gaussian mixtures (heights in
[5, 20], centres in [20, 80], widths in [5, 15]) sampled at 501 points; PrivFuncSelect over
the monomial32 spec against k privatized samples (k in {10, 20, 50, 100}, s = k/10), the
best k per budget chosen with hindsight. Errors are L2 over [0, 100].
Run: python experiments/gaussian_mixtures.py [--seeds 5]
"""
import argparse
import math
import sys
from pathlib import Path

import numpy

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpcompiler import baseline_points, priv_func_select  # noqa: E402
from gpcompiler.build import import_module_file  # noqa: E402

BUDGETS = (1.0, 10.0, 100.0)
POINTS = (10, 20, 50, 100)


def mixtures(count, rng):
    t = numpy.linspace(0, 100, 501)
    curves = []
    for _ in range(count):
        heights, centres, widths = rng.uniform(5, 20, 2), rng.uniform(20, 80, 2), rng.uniform(5, 15, 2)
        curves.append(sum(h * numpy.exp(-(t - c) ** 2 / (2 * w ** 2))
                          for h, c, w in zip(heights, centres, widths)))
    return t, curves


def run(curves=20, seeds=5, progress=None):
    """{(method, epsilon): mean L2 error}, baseline k per budget, mean selected size."""
    module = import_module_file(ROOT / "generated" / "monomial32.py")
    t, ys = mixtures(curves, numpy.random.default_rng(2024))

    def l2(values, y):
        return math.sqrt(numpy.trapezoid((values - y) ** 2, t))
    table, settings = {}, {}
    for epsilon in BUDGETS:
        if progress:
            progress(f"epsilon = {epsilon}")
        results = [priv_func_select(t, y, module, epsilon=epsilon, rng=numpy.random.default_rng(s))
                   for y in ys for s in range(seeds)]
        table["PrivFuncSelect", epsilon] = numpy.mean(
            [l2(r.evaluate(t), ys[i // seeds]) for i, r in enumerate(results)])
        settings["PrivFuncSelect", epsilon] = numpy.mean([len(r.basis_indices) for r in results])
        for smoothed in (False, True):
            best = None
            for k in POINTS:
                window = max(1, k // 10) if smoothed else None
                errors = [l2(baseline_points(t, y, k, domain=(0.0, 100.0), epsilon=epsilon, window=window,
                                             rng=numpy.random.default_rng(s)).evaluate(t), y)
                          for y in ys for s in range(seeds)]
                if best is None or numpy.mean(errors) < best[0]:
                    best = (numpy.mean(errors), k)
            name = "Baseline (smoothed)" if smoothed else "Baseline"
            table[name, epsilon], settings[name, epsilon] = best
    return table, settings


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    table, settings = run(seeds=args.seeds, progress=lambda m: print(m, file=sys.stderr))
    print("| method | " + " | ".join(f"eps = {e:g}" for e in BUDGETS) + " |")
    print("|---|" + "---|" * len(BUDGETS))
    for method in ("PrivFuncSelect", "Baseline", "Baseline (smoothed)"):
        cells = []
        for epsilon in BUDGETS:
            extra = (f" ({settings[method, epsilon]:.1f} functions)" if method == "PrivFuncSelect"
                     else f" (k={settings[method, epsilon]})")
            cells.append(f"{table[method, epsilon]:.1f}{extra}")
        print(f"| {method} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
