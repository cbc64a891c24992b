"""The paper's evaluation protocol (Sec. 5, App. C.3, F; docs/design.md, "Utility").

Errors are the paper's: the L2 distance between the release and the curve q over the
public domain, normalized by ||q|| (Sec. 5: "normalized by the L2 norm of the original
input curve"), and its square (the functional MSE). Reported per method and budget: the
mean, and the median with 25th/75th percentiles, over every simulation of every curve.
Simulation j of curve i draws from the generator seeded [BASE_SEED, i, j] for every
method and budget, so all methods see the same curves and seeds.
"""
import hashlib
import math
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from fractions import Fraction
from importlib import import_module

import numpy
from numpy.polynomial import legendre

from ..adaptive.baseline import baseline_bound, sliding_mean
from ..adaptive.curve import make_curve
from ..adaptive.ledger import PrivacyLedger, check_budget
from ..io.curves import Curves, read_curves
from ..errors import DataError
from ..adaptive.noise import clip, release_scale
from ..runtime.rounding import ceil_float, ceil_sqrt
from ..runtime import exact

BASE_SEED = 20260501


@dataclass(frozen=True)
class Dataset:
    """Curves on a public domain, with where they came from."""
    source: str
    sha256: str
    ids: tuple
    times: tuple
    values: tuple
    domain: tuple
    notes: dict = field(default_factory=dict)


def sha256_of(raw):
    return hashlib.sha256(raw).hexdigest()


def checked_dataset(source, raw, curves, domain, notes=None):
    """A :class:`Dataset` whose curves all lie in the public ``domain``; a curve that does
    not is a one-line error naming it."""
    for key, t, y in zip(curves.ids, curves.times, curves.values):
        try:
            make_curve(t, y, domain)
        except ValueError as error:
            raise DataError(f"{source}: curve {key!r}: {error}") from None
    return Dataset(source, sha256_of(raw), tuple(curves.ids), tuple(curves.times),
                   tuple(curves.values), tuple(float(v) for v in domain), notes or {})


def user_curves(path, count):
    """The first ``count`` (None: all) curves of the user's CSV in the layout `gpcompiler
    privatize` reads, and the file's bytes (for its sha256)."""
    found = read_curves(path)
    with open(path, "rb") as handle:
        raw = handle.read()
    return first(found, count), raw


def first(curves, count):
    """The first ``count`` curves (None: all)."""
    return Curves(*(field_[:count] for field_ in (curves.ids, curves.times, curves.values)),
                  curves.value_names)


def largest_bound(key, budget):
    """The largest clip bound a release at this budget accepts (2^50 lattice steps of its
    noise scale; docs/clipping.md): the experiments reproduce the papers' mechanisms on
    real curves, which this bound never clips (their slack 2 eta B is then larger than at
    the default bound, a public number the ledger states)."""
    scale = ceil_float(1 / Fraction(budget)) if key == "epsilon" else ceil_sqrt(
        1 / (2 * Fraction(budget)))
    return math.ldexp(exact.lattice(scale), 50)


def simulation_rng(curve, simulation):
    """The generator of simulation ``simulation`` of curve number ``curve`` (any method)."""
    return numpy.random.default_rng([BASE_SEED, curve, simulation])


def l2_distance(evaluate, curve, knots=(), nodes=2):
    """||f - q|| over the curve's domain by Gauss-Legendre with ``nodes`` points on every
    piece between the samples, the knots and the domain ends: exact up to rounding when f
    is a polynomial of degree < nodes between knots ((f - q)^2 then has degree
    <= 2 nodes - 2)."""
    points, weights, q = gauss_nodes(curve, knots, nodes)
    f = numpy.asarray(evaluate(points), dtype=float).reshape(q.shape)
    return math.sqrt(float(weights @ numpy.sum((f - q) ** 2, axis=-1)))


def gauss_nodes(curve, knots, nodes):
    """(points, weights, q at the points (P, n)) of Gauss-Legendre with ``nodes`` points on
    every piece of q cut at the knots."""
    lo, hi, y_lo, y_hi = curve.pieces(knots)
    x, w = legendre.leggauss(nodes)
    lam = (x + 1) / 2
    points = (lo[:, None] + (hi - lo)[:, None] * lam).ravel()
    weights = ((hi - lo)[:, None] * w / 2).ravel()
    q = y_lo[:, None, :] * (1 - lam)[None, :, None] + y_hi[:, None, :] * lam[None, :, None]
    return points, weights, q.reshape(points.size, -1)


def summary(errors):
    """Mean, median and quartiles of normalized L2 errors and of their squares."""
    errors = numpy.asarray(errors, dtype=float).ravel()
    out = {}
    for name, values in (("l2", errors), ("squared", errors ** 2)):
        q25, median, q75 = numpy.percentile(values, [25, 50, 75])
        out[name] = {"mean": float(values.mean()), "median": float(median),
                     "q25": float(q25), "q75": float(q75)}
    return out


def _task(arguments):
    name, index, t, y, domain, model, budgets, simulations, quick = arguments
    experiment = import_module(f"{__package__}.{name}")
    return experiment.simulate(index, t, y, domain, model, budgets, simulations, quick)


def run_tasks(name, dataset, models, simulations, quick, jobs):
    """simulate() of every (curve, model), in ``jobs`` processes, with a progress bar on
    stderr (silent when stderr is not a terminal): {model: [per-curve results]}."""
    from tqdm import tqdm
    tasks = [(name, i, t, y, dataset.domain, model, budgets, simulations, quick)
             for model, budgets in models.items()
             for i, (t, y) in enumerate(zip(dataset.times, dataset.values))]
    bar = tqdm(total=len(tasks), desc=f"experiment {name}", unit="curve",
               disable=not sys.stderr.isatty(), file=sys.stderr)
    with bar:
        if jobs > 1:
            with ProcessPoolExecutor(jobs) as pool:
                results = []
                for result in pool.map(_task, tasks):
                    results.append(result)
                    bar.update()
        else:
            results = []
            for task in tasks:
                results.append(_task(task))
                bar.update()
    grouped = {model: [] for model in models}
    for task, result in zip(tasks, results):
        grouped[task[5]].append(result)
    return grouped


def baseline_errors(index, t, y, curve, key, budgets, simulations, plan):
    """Normalized errors of the LY23 baseline for every (k, s) of ``plan`` = [(k label, k,
    [(s label, s), ...]), ...]: {"Baseline": {...}, "Baseline (smoothed)": {...}}, each
    setting (budget, simulation). Simulation j's release is exactly baseline_points(t, y,
    k, rng=simulation_rng(index, j)) (same draws in the same order, see baseline_release);
    smoothing is post-processing of that release (baseline_points(window=s) with the same
    seed returns exactly the smoothed one), so every s reuses it. All budgets, simulations
    and windows of one k are integrated at once (one interpolation on shared pieces)."""
    norm = math.sqrt(curve.norm_squared())
    plain, smoothed = {}, {}
    shape = (len(budgets), simulations)
    for k_label, k, windows in plan:
        times = numpy.linspace(*curve.domain, k)
        points = curve(times)
        noisy = numpy.stack([baseline_release(key, budget, points, simulation_rng(index, j))
                             for budget in budgets for j in range(simulations)], axis=1)
        joined = JoinedErrors(curve, times)
        plain[k_label] = (joined(noisy) / norm).reshape(shape).tolist()
        for label, window in windows:
            values = noisy if window <= 1 else sliding_mean(
                noisy.reshape(k, -1), int(window)).reshape(noisy.shape)
            smoothed[f"{k_label}, {label}"] = (joined(values) / norm).reshape(shape).tolist()
    return {"Baseline": plain, "Baseline (smoothed)": smoothed}


def baseline_release(key, budget, points, rng):
    """What baseline_points(k, rng=rng, key=budget) releases at its k points (k, n): each
    point clipped to the default bound and exactly noised, with the same scale and the same
    draws from ``rng`` in the same order as its per-point privatize_vector, without a
    ledger per point."""
    model, value = check_budget(**{"epsilon": None, "rho": None, key: budget})
    share = PrivacyLedger(value, model).share(Fraction(1, len(points)))
    scale, bound = release_scale(model, share), baseline_bound(model, share)
    sample = exact.spherical_laplace if model == "GP" else exact.gaussian
    return numpy.stack([sample(clip(point, bound), scale, rng) for point in points])


class JoinedErrors:
    """||f - q|| for many sets of values at the public ``times`` joined linearly, f linear
    between knots: 2-point Gauss-Legendre on q's pieces cut at the times (exact up to
    rounding, as l2_distance), the nodes' interpolation weights computed once."""

    def __init__(self, curve, times):
        points, self.weights, self.q = gauss_nodes(curve, times, 2)
        self.left = numpy.clip(numpy.searchsorted(times, points, side="right") - 1, 0,
                               times.size - 2)
        self.share = ((points - times[self.left])
                      / (times[self.left + 1] - times[self.left]))[:, None, None]

    def __call__(self, values):
        """values (k, B, n) at the times: the B distances."""
        f = values[self.left] * (1 - self.share) + values[self.left + 1] * self.share
        return numpy.sqrt(numpy.einsum("p,pbr->b", self.weights, (f - self.q[:, None, :]) ** 2))
