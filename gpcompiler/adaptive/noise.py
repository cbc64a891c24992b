"""Noise of the local mechanisms (paper Thm 3.2, 3.3), charged to a ledger first; every
released vector is clipped to a public bound first (docs/clipping.md)."""
import math
from fractions import Fraction

import numpy

from ..rounding import ceil_float, ceil_sqrt
from ..runtime.exact import lattice


def spherical_laplace(rng, shape, dimension):
    """Z with density ~ exp(-|z|) in R^dimension: radius Gamma(d, 1), direction a normalized
    Gaussian vector. ``shape`` is the batch shape."""
    direction = rng.standard_normal(tuple(shape) + (dimension,))
    direction /= numpy.linalg.norm(direction, axis=-1, keepdims=True)
    return rng.gamma(dimension, size=tuple(shape))[..., None] * direction


def clip(vector, bound):
    """vector * min(1, B/||vector||): the projection onto the Euclidean ball of radius B,
    non-expansive; scaled by the largest entry (no overflow)."""
    vector = numpy.asarray(vector, dtype=float)
    big = float(numpy.max(numpy.abs(vector), initial=0.0))
    if big == 0:
        return vector
    ratio = bound / big / math.sqrt(float(numpy.sum((vector / big) ** 2)))
    return vector * min(1.0, ratio)


def release_scale(model, share):
    """The noise scale of a release of parameter ``share``: 1/epsilon (GP), 1/sqrt(2 rho)
    (CGP), rounded up by exact arithmetic."""
    if model == "GP":
        return ceil_float(1 / Fraction(share))
    return ceil_sqrt(1 / (2 * Fraction(share)))


def privatize_vector(vector, ledger, label, share, *, rng, bound=math.inf, eta=None):
    """clip(vector, bound) + Z/epsilon with one spherical Laplace vector over all
    coordinates (GP ledger, epsilon = share), or + N(0, I)/sqrt(2 rho) (CGP ledger, rho =
    share); the step is charged to ``ledger`` before anything is drawn, with its bound B, the
    slack 2 eta B and the lattice step gamma of its noise scale (``bound`` math.inf: no
    clip, for the auditor's probes of the noise with zero vectors; ``eta`` None: no slack
    is stated, as for the baseline's interpolated values)."""
    gp = ledger.model == "GP"
    scale = release_scale(ledger.model, share)
    clipped = clip(vector, bound)
    if gp:
        ledger.spend_gp(label, share)
    else:
        ledger.spend_cgp(label, share)
    slack = (None if eta is None or not math.isfinite(bound)
             else ceil_float(2 * Fraction(eta) * Fraction(bound)))
    ledger.note_release(label, bound, slack, lattice(scale))
    return _add_noise(clipped, gp, scale, rng)


def _add_noise(vector, gp, scale, rng):
    """vector + scale Z, Z spherical Laplace (GP) or standard normal (CGP)."""
    if gp:
        noise = spherical_laplace(rng, (), vector.size) * scale
    else:
        noise = rng.standard_normal(vector.size) * scale
    return vector + noise.reshape(vector.shape)


def scalar_noise(ledger, label, sensitivity, share, *, rng):
    """One noisy scalar query of the given sensitivity: Laplace (GP ledger, epsilon = share)
    or Gaussian (CGP ledger, rho = share). Returns the noise value."""
    if ledger.model == "GP":
        ledger.spend_gp(label, share)
        return rng.laplace(0.0, ceil_float(Fraction(sensitivity) / Fraction(share)))
    ledger.spend_cgp(label, share)
    return rng.standard_normal() * ceil_sqrt(Fraction(sensitivity) ** 2 / (2 * Fraction(share)))
