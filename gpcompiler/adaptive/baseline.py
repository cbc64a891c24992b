"""The baseline of the paper's experiments (LY23): k privatized points joined linearly.

k evenly spaced points of the public domain [a, b] (never of the private sample times) are
read off the curve (zero outside its samples) and privatized one by one (GP: n-dim spherical Laplace
with epsilon/k each; CGP: Gaussian with rho/k each) by basic composition; this protects
each released point (the dist_inf metric of LY23), not the L2 metric of the paper's
mechanisms. ``window`` = s applies a centred sliding-window mean of width s. Each point's
value is clipped to the public bound B before its noise (the ball of radius B: [-B, B] for
scalar values; docs/clipping.md).
"""
import math
from fractions import Fraction

import numpy

from ..runtime.secure import default_generator
from .curve import make_curve
from .ledger import PrivacyLedger, check_budget
from ..runtime.exact import lattice
from .noise import privatize_vector, release_scale
from .results import PrivateFunction


def baseline_bound(model, share, bound=None):
    """The public bound B of the baseline's values: ``bound``, else 2^40 lattice steps of
    the noise scale of one point (2^24 times the largest power of two below the scale); at
    most 2^50 lattice steps."""
    step = lattice(release_scale(model, share))
    radius = math.ldexp(step, 40) if bound is None else bound
    if isinstance(radius, bool) or not isinstance(radius, (int, float, numpy.integer,
                                                           numpy.floating)) \
            or not (math.isfinite(radius) and 0 < radius <= math.ldexp(step, 50)):
        raise ValueError(f"the bound must be positive and at most 2^50 lattice steps "
                         f"({math.ldexp(step, 50)!r}) at this budget, got {radius!r}")
    return float(radius)


def baseline_points(t, y, k, *, domain, epsilon=None, rho=None, window=None, rng=None,
                    bound=None, outside="zero"):
    """Privatize the curve's values at k evenly spaced points of the public ``domain``
    (a, b), each clipped to the public bound B (``bound``, default baseline_bound), and
    join them linearly; ``outside``: the curve outside its samples, "zero" or "hold" (a
    spec's [curve] outside, as in make_curve)."""
    model, budget = check_budget(epsilon, rho)
    curve = make_curve(t, y, domain, outside)
    if isinstance(k, bool) or not isinstance(k, (int, numpy.integer)) or k < 2:
        raise ValueError(f"k must be an integer >= 2, got {k!r}")
    if window is not None and (isinstance(window, bool) or not isinstance(window, (int, numpy.integer))
                               or not 1 <= window <= k):
        raise ValueError(f"window must be an integer in 1..k, got {window!r}")
    rng = default_generator(rng)
    ledger = PrivacyLedger(budget, model)
    share = ledger.share(Fraction(1, k))
    bound = baseline_bound(model, share, bound)
    times = numpy.linspace(*curve.domain, k)
    points = curve(times)
    noisy = numpy.stack([privatize_vector(points[i], ledger, f"baseline: point {i}", share,
                                          rng=rng, bound=bound) for i in range(k)])
    if window is not None and window > 1:
        noisy = sliding_mean(noisy, int(window))

    def evaluator(x):
        return numpy.stack([numpy.interp(x, times, noisy[:, r]) for r in range(curve.value_dim)], axis=-1)
    return PrivateFunction("baseline_points", ledger, curve.value_dim, evaluator,
                           breakpoints=times, coefficients=noisy, details=(("k", k), ("window", window)))


def sliding_mean(values, width):
    """Centred moving average; the window shrinks at the ends."""
    cumulative = numpy.concatenate([numpy.zeros((1, values.shape[1])), numpy.cumsum(values, axis=0)])
    index = numpy.arange(values.shape[0])
    lo = numpy.clip(index - (width - 1) // 2, 0, values.shape[0])
    hi = numpy.clip(index + width // 2 + 1, 0, values.shape[0])
    return (cumulative[hi] - cumulative[lo]) / (hi - lo)[:, None]
