"""One day of a vessel's speed, from the bundled AIS data, privatized in a cubic B-spline
basis (docs/tutorials/spline.md): the speeds, their projection onto
docs/spline_tutorial.toml and ε-GP releases at ε = 1 and ε = 0.2. Writes
docs/spline_tutorial.png and prints the numbers the tutorial quotes
(docs/spline_tutorial.txt).

    python docs/spline_tutorial.py > docs/spline_tutorial.txt

Data: gpcompiler/data/nyharbor_ais_2020-12-01_07.csv.gz (tracktable-data, BSD-2; see
gpcompiler/data/PROVENANCE.md), the position reports of one vessel on one day.
"""
import csv
import gzip
import re
import tempfile
from datetime import datetime, timedelta, timezone
from importlib import resources
from pathlib import Path

import numpy

import gpcompiler
from gpcompiler.io.curves import AIS_CENTRE

HERE = Path(__file__).resolve().parent
VESSEL = "367000150"                               # its MMSI in the data
NEW_YORK = timezone(timedelta(hours=-5))           # EST, December
DAY = datetime(2020, 12, 4, tzinfo=NEW_YORK)       # a Friday, midnight to midnight
KNOT = 1852.0 / 3600.0                             # m/s
EPSILONS = (1.0, 0.2)


def reports():
    """(hours since DAY's midnight, x, y in metres) of VESSEL's reports on DAY, time-ordered
    without repeated times: the local plane of bundled_trajectories (equirectangular about
    the public point AIS_CENTRE)."""
    data = resources.files("gpcompiler").joinpath("data/nyharbor_ais_2020-12-01_07.csv.gz")
    rows = [r for r in csv.DictReader(gzip.decompress(data.read_bytes()).decode().splitlines())
            if r["vessel"] == VESSEL]
    hours = numpy.array([(datetime.fromisoformat(r["time"]).replace(tzinfo=timezone.utc) - DAY)
                         / timedelta(hours=1) for r in rows])
    radius, (lat0, lon0) = 6371008.8, numpy.radians(AIS_CENTRE)
    x = radius * numpy.cos(lat0) * (numpy.radians([float(r["lon"]) for r in rows]) - lon0)
    y = radius * (numpy.radians([float(r["lat"]) for r in rows]) - lat0)
    hours, first = numpy.unique(hours, return_index=True)
    inside = (hours >= 0) & (hours <= 24)
    return hours[inside], x[first][inside], y[first][inside]


def speeds():
    """(hours, knots): the mean speed over each interval between consecutive reports, at the
    interval's midpoint."""
    hours, x, y = reports()
    metres_per_hour = numpy.hypot(numpy.diff(x), numpy.diff(y)) / numpy.diff(hours)
    return (hours[1:] + hours[:-1]) / 2, metres_per_hour / 3600.0 / KNOT


def rms_from(module, t, v):
    """RMS distance (kn) of the speeds from their projection onto ``module``'s space."""
    return numpy.sqrt(numpy.mean((module.evaluate(module.project(t, v), t) - v) ** 2))


def hourly_knots():
    """The tutorial's spec with knots every hour instead of every 2 h (d = 27), compiled."""
    spec = re.sub(r"knots = \[[^]]*\]", f"knots = {list(range(1, 24))}",
                  (HERE / "spline_tutorial.toml").read_text())
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "hourly.toml").write_text(spec)
        return gpcompiler.load(Path(folder) / "hourly.toml")


def main():
    module = gpcompiler.load(HERE / "spline_tutorial.toml")
    t, v = speeds()
    c = module.project(t, v)
    grid = numpy.linspace(0.0, 24.0, 961)
    fitted = module.evaluate(c, grid)
    length = 24.0
    print(f"vessel {VESSEL}, {DAY:%Y-%m-%d}: {t.size} speeds, {t[0]:.2f} h to {t[-1]:.2f} h, "
          f"{v.min():.1f} to {v.max():.1f} kn, at most {numpy.diff(t).max() * 60:.0f} min apart")
    print(f"d = {module.BASIS_SIZE} cubic B-splines, knots {module.PIECE_BREAKS.tolist()} h")
    print(f"||P q|| = {numpy.linalg.norm(c):.1f} kn sqrt(h), bound B = {module.BOUND}; "
          f"ETA B = {module.ETA * module.BOUND:.2e}")
    print(f"projection: mean {numpy.mean(fitted):.1f} kn over the day, RMS "
          f"{rms_from(module, t, v):.1f} kn from the speeds")
    finer = hourly_knots()
    print(f"knots every hour instead: d = {finer.BASIS_SIZE}, RMS {rms_from(finer, t, v):.1f} kn "
          f"from the speeds; noise RMS at epsilon = 1: "
          f"{finer.expected_error(epsilon=1.0) / numpy.sqrt(24.0):.1f} kn (2 h knots: "
          f"{module.expected_error(epsilon=1.0) / numpy.sqrt(24.0):.1f} kn)")
    releases = {}
    for epsilon in EPSILONS:
        noisy = module.privatize(c, epsilon=epsilon, rng=numpy.random.default_rng(2020))
        releases[epsilon] = module.evaluate(noisy, grid)
        expected = module.expected_error(epsilon=epsilon)
        print(f"epsilon = {epsilon:g}: E||noise|| = d/epsilon = {expected:g} kn sqrt(h), "
              f"RMS {expected / numpy.sqrt(length):.1f} kn over 24 h; this release "
              f"{numpy.linalg.norm(noisy - c) / numpy.sqrt(length):.1f} kn RMS from the "
              "projection (not private)")
    plot(t, v, grid, fitted, releases, module.PIECE_BREAKS)


def plot(t, v, grid, fitted, releases, knots):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, axes = plt.subplots(figsize=(9, 4.2), dpi=110)
    axes.plot(t, v, ".", color="0.6", markersize=2.5, label="speeds from AIS reports (not private)")
    axes.plot(grid, fitted, color="black", linewidth=1.4,
              label="projection onto the spline space (not private)")
    for (epsilon, curve), colour in zip(releases.items(), ("tab:blue", "tab:red")):
        axes.plot(grid, curve, color=colour, linewidth=1.2, label=f"ε-GP release, ε = {epsilon:g}")
    for knot in knots[1:-1]:
        axes.axvline(knot, color="0.85", linewidth=0.8, zorder=0)
    axes.set_xlim(0, 24)
    axes.set_xticks(range(0, 25, 2))
    axes.set_xlabel("time of day (h, New York, EST); grey lines: the knots")
    axes.set_ylabel("speed over ground (kn)")
    axes.set_title(f"Vessel {VESSEL}, New York Harbor, {DAY.day} {DAY:%B %Y}: cubic B-splines, d = 15")
    axes.legend(loc="lower center", fontsize=8, frameon=False, ncol=2)
    figure.tight_layout()
    figure.savefig(HERE / "spline_tutorial.png")


if __name__ == "__main__":
    main()
