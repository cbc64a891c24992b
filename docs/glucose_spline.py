"""One day of continuous glucose monitoring (CGM) readings privatized in a cubic B-spline
basis (docs/tutorials/spline.md): the readings, their projection onto docs/glucose_spline.toml
and ε-GP releases at ε = 1 and ε = 0.2. Writes docs/glucose_spline.png and prints the
numbers the tutorial quotes (docs/glucose_spline.txt).

    python docs/glucose_spline.py > docs/glucose_spline.txt

Data: docs/data/glucose_t1dexchange_2015-06-17.csv, the 280 readings of 17 June 2015 of
iglu's example_data_1_subject (T1D Exchange; see the tutorial for its provenance).
"""
import csv
from pathlib import Path

import numpy

import gpcompiler

HERE = Path(__file__).resolve().parent
EPSILONS = (1.0, 0.2)


def readings():
    """(hours since midnight, glucose in mg/dL): the times exactly h + m/60 + s/3600."""
    with open(HERE / "data" / "glucose_t1dexchange_2015-06-17.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    hours = [sum(int(part) / 60 ** k for k, part in enumerate(r["time"].split(":")))
             for r in rows]
    return numpy.array(hours), numpy.array([float(r["glucose_mg_dl"]) for r in rows])


def main():
    module = gpcompiler.load(HERE / "glucose_spline.toml")
    t, y = readings()
    c = module.project(t, y)
    grid = numpy.linspace(0.0, 24.0, 961)
    fitted = module.evaluate(c, grid)
    length = 24.0
    print(f"{t.size} readings, {t[0]:.2f} h to {t[-1]:.2f} h, {y.min():.0f} to {y.max():.0f} "
          f"mg/dL")
    print(f"d = {module.BASIS_SIZE} cubic B-splines, knots {module.PIECE_BREAKS.tolist()} h")
    print(f"||P q|| = {numpy.linalg.norm(c):.1f} mg/dL sqrt(h), bound B = {module.BOUND}; "
          f"ETA B = {module.ETA * module.BOUND:.2e}")
    print(f"projection: RMS {numpy.sqrt(numpy.mean((module.evaluate(c, t) - y) ** 2)):.1f} "
          "mg/dL at the readings")
    releases = {}
    for epsilon in EPSILONS:
        noisy = module.privatize(c, epsilon=epsilon, rng=numpy.random.default_rng(2015))
        releases[epsilon] = module.evaluate(noisy, grid)
        expected = module.expected_error(epsilon=epsilon)
        print(f"epsilon = {epsilon:g}: E||noise|| = d/epsilon = {expected:g} mg/dL sqrt(h), "
              f"RMS {expected / numpy.sqrt(length):.1f} mg/dL over 24 h; this release "
              f"{numpy.linalg.norm(noisy - c) / numpy.sqrt(length):.1f} mg/dL RMS from the "
              "projection (not private)")
    plot(t, y, grid, fitted, releases, module.PIECE_BREAKS)


def plot(t, y, grid, fitted, releases, knots):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, axes = plt.subplots(figsize=(9, 4.2), dpi=110)
    axes.plot(t, y, ".", color="0.55", markersize=3, label="CGM readings (not private)")
    axes.plot(grid, fitted, color="black", linewidth=1.4,
              label="projection onto the spline space (not private)")
    for (epsilon, curve), colour in zip(releases.items(), ("tab:blue", "tab:red")):
        axes.plot(grid, curve, color=colour, linewidth=1.2, label=f"ε-GP release, ε = {epsilon:g}")
    for knot in knots[1:-1]:
        axes.axvline(knot, color="0.85", linewidth=0.8, zorder=0)
    axes.set_xlim(0, 24)
    axes.set_xticks(range(0, 25, 2))
    axes.set_xlabel("time of day (h); grey lines: the knots")
    axes.set_ylabel("glucose (mg/dL)")
    axes.set_title("One day of CGM readings (T1D Exchange, via iglu), cubic B-splines, d = 15")
    axes.legend(loc="lower center", fontsize=8, frameon=False, ncol=2)
    figure.tight_layout()
    figure.savefig(HERE / "glucose_spline.png")


if __name__ == "__main__":
    main()
