"""Noise of the local mechanisms (paper Thm 3.2, 3.3), charged to a ledger first."""
from fractions import Fraction

import numpy

from ..errors import DataError
from ..rounding import ceil_float, ceil_sqrt


def spherical_laplace(rng, shape, dimension):
    """Z with density ~ exp(-|z|) in R^dimension: radius Gamma(d, 1), direction a normalized
    Gaussian vector. ``shape`` is the batch shape."""
    direction = rng.standard_normal(tuple(shape) + (dimension,))
    direction /= numpy.linalg.norm(direction, axis=-1, keepdims=True)
    return rng.gamma(dimension, size=tuple(shape))[..., None] * direction


def privatize_vector(vector, ledger, label, share, *, rng):
    """vector + Z/epsilon with one spherical Laplace vector over all coordinates (GP ledger,
    epsilon = share), or vector + N(0, I)/sqrt(2 rho) (CGP ledger, rho = share); the step
    is charged to ``ledger`` before anything is drawn."""
    vector = numpy.asarray(vector, dtype=float)
    gp = ledger.model == "GP"
    scale = ceil_float(1 / Fraction(share)) if gp else ceil_sqrt(1 / (2 * Fraction(share)))
    if not numpy.linalg.norm(vector) <= scale * 2.0 ** 40:
        raise DataError(f"{label}: the values have norm above the noise scale x 2^40: the "
                        "noise would be lost in float64 rounding; rescale the data or use a "
                        "smaller budget")
    if gp:
        ledger.spend_gp(label, share)
        noise = spherical_laplace(rng, (), vector.size) * scale
    else:
        ledger.spend_cgp(label, share)
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
