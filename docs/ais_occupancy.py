"""Local GP release of each AIS vessel's occupancy map (hours per km^2 in 1 km cells of the
public box [-20, 20]^2 km about AIS_CENTRE), with specs/harbour.toml (d = 169), against the
same mechanism on the 1600 cell indicators (d = 1600); the aggregate over vessels against
the true one. Writes docs/ais_occupancy.png and prints the table of the README.

    python docs/ais_occupancy.py
"""
import csv
import gzip
import io
from importlib import resources

import numpy

import gpcompiler
from gpcompiler.io.curves import bundled_trajectories

HALF, CELLS, STEP = 20.0, 40, 0.25          # km, cells per axis, minutes between samples
EPSILONS = (0.1, 0.3, 1.0, 3.0, 10.0)
SEEDS = 5


def vessel_of_trajectory():
    raw = resources.files("gpcompiler").joinpath("data/nyharbor_ais_2020-12-01_07.csv.gz")
    rows = csv.DictReader(io.StringIO(gzip.decompress(raw.read_bytes()).decode()))
    return {f"ais{r['trajectory']}": r["vessel"] for r in rows}


def occupancy_maps():
    """Hours per km^2 in each cell, per vessel: each trajectory sampled every STEP minutes
    along its piecewise-linear path (gaps over 30 minutes skipped), restricted to the box."""
    curves = bundled_trajectories(minimum_points=2)
    vessels = vessel_of_trajectory()
    edges = numpy.linspace(-HALF, HALF, CELLS + 1)
    maps = {}
    for key, t, xy in zip(curves.ids, curves.times, curves.values):
        samples = numpy.arange(t[0], t[-1], STEP)
        piece = numpy.clip(numpy.searchsorted(t, samples, side="right") - 1, 0, t.size - 2)
        keep = numpy.diff(t)[piece] <= 30
        points = numpy.column_stack([numpy.interp(samples, t, xy[:, i] / 1000) for i in (0, 1)])
        counts, _, _ = numpy.histogram2d(points[keep, 0], points[keep, 1], bins=(edges, edges))
        maps.setdefault(vessels[key], numpy.zeros((CELLS, CELLS)))
        maps[vessels[key]] += counts * STEP / 60 / (edges[1] - edges[0]) ** 2
    return edges, numpy.stack(list(maps.values()))


def cell_release(fields, epsilon, rng, area):
    """Project-and-Privatize on the orthonormal cell indicators 1_c/sqrt(area) (paper
    Thm 3.2 with d = #cells): spherical Laplace in R^d of radius Gamma(d)/epsilon."""
    shape = fields.shape
    flat = fields.reshape(shape[0], -1) * numpy.sqrt(area)
    d = flat.shape[1]
    direction = rng.standard_normal(flat.shape)
    direction /= numpy.linalg.norm(direction, axis=1, keepdims=True)
    noisy = flat + direction * rng.gamma(d, size=(shape[0], 1)) / epsilon
    return noisy.reshape(shape) / numpy.sqrt(area)


def main():
    harbour = gpcompiler.load("specs/harbour.toml")
    edges, fields = occupancy_maps()
    area = (edges[1] - edges[0]) ** 2
    grids = (edges, edges)
    centres = (edges[:-1] + edges[1:]) / 2
    points = numpy.stack(numpy.meshgrid(centres, centres, indexing="ij"), axis=-1)
    truth = fields.sum(axis=0)
    norm = numpy.sqrt((truth ** 2).sum() * area)
    projected = harbour.project_grid(grids, fields, kind="cells").sum(axis=0)
    bias = numpy.sqrt(((harbour.evaluate(projected, points) - truth) ** 2).sum() * area) / norm
    print(f"{fields.shape[0]} vessels, {truth.sum() * area:.0f} vessel-hours in the box; "
          f"projection alone: relative L2 error {bias:.3f}")
    print("| ε | harbour (d = 169) | cells (d = 1600) |\n|---|---|---|")
    shown = {}
    for epsilon in EPSILONS:
        errors = {"harbour": [], "cells": []}
        for seed in range(SEEDS):
            rng = numpy.random.default_rng(seed)
            c = harbour.project_and_privatize(grids, fields, kind="cells", epsilon=epsilon,
                                              rng=rng).sum(axis=0)
            released = {"harbour": harbour.evaluate(c, points),
                        "cells": cell_release(fields, epsilon, rng, area).sum(axis=0)}
            for name, value in released.items():
                errors[name].append(numpy.sqrt(((value - truth) ** 2).sum() * area) / norm)
            if seed == 0:
                shown[epsilon] = released
        print(f"| {epsilon:g} | {numpy.mean(errors['harbour']):.3f} ± "
              f"{numpy.std(errors['harbour']):.3f} | {numpy.mean(errors['cells']):.3f} ± "
              f"{numpy.std(errors['cells']):.3f} |")
    figure(edges, truth, harbour.evaluate(projected, points), shown)


def figure(edges, truth, projected, shown):
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot
    panels = [("true aggregate", truth), ("its projection (no noise)", projected)] + [
        (f"{name}, ε = {epsilon:g}", shown[epsilon][name])
        for epsilon in (1.0, 10.0) for name in ("harbour", "cells")]
    fig, axes = pyplot.subplots(2, 3, figsize=(12, 8), sharex=True, sharey=True)
    axes = axes.ravel()
    top = float(numpy.percentile(truth, 99.5))
    for axis, (title, value) in zip(axes, panels):
        image = axis.imshow(value.T, origin="lower", extent=[edges[0], edges[-1]] * 2,
                            vmin=0, vmax=top, cmap="viridis")
        axis.set_title(title)
    for axis in axes[3:]:
        axis.set_xlabel("x (km east of the centre)")
    for axis in axes[::3]:
        axis.set_ylabel("y (km north of the centre)")
    fig.colorbar(image, ax=axes, shrink=0.8, label="vessel-hours per km²")
    fig.savefig("docs/ais_occupancy.png", dpi=80, bbox_inches="tight")


if __name__ == "__main__":
    main()
