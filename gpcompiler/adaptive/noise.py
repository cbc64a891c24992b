"""Noise of the local mechanisms (paper Thm 3.2, 3.3), charged to a ledger first. Releases
and noisy comparisons are exact (gpcompiler/runtime/exact.py); the auditor's replay objects
(``audit_replay = True``) draw the same laws as floats, to read scales and script decisions."""
from fractions import Fraction

import numpy

from ..errors import DataError
from ..rounding import ceil_float, ceil_sqrt
from ..runtime import exact
from ..runtime.entropy import default_generator


def spherical_laplace(rng, shape, dimension):
    """Float simulation of Z with density ~ exp(-|z|) in R^dimension (the auditor's batched
    runs): radius Gamma(d, 1), direction a normalized Gaussian vector."""
    direction = rng.standard_normal(tuple(shape) + (dimension,))
    direction /= numpy.linalg.norm(direction, axis=-1, keepdims=True)
    return rng.gamma(dimension, size=tuple(shape))[..., None] * direction


def _replay(rng):
    """Whether ``rng`` is one of the auditor's replay objects (never a release's source)."""
    return getattr(rng, "audit_replay", False)


def noise_source(rng):
    """default_generator(rng), or the auditor's replay object as it is."""
    return rng if _replay(rng) else default_generator(rng)


def draw(rng, kind, scale):
    """One lazily sampled scalar noise scale * Z (Z Laplace or normal): an exact.Noise,
    whose sums and comparisons are decided as the real numbers decide them."""
    if _replay(rng):
        return rng.laplace(0.0, scale) if kind == "laplace" else rng.standard_normal() * scale
    return exact.Noise(kind, scale, rng)


def privatize_vector(vector, ledger, label, share, *, rng):
    """round_gamma(vector + Z/epsilon) with one spherical Laplace vector over all coordinates
    (GP ledger, epsilon = share), or of vector + N(0, I)/sqrt(2 rho) (CGP ledger,
    rho = share), exactly; the step is charged to ``ledger`` before anything is drawn."""
    vector = numpy.asarray(vector, dtype=float)
    gp = ledger.model == "GP"
    scale = ceil_float(1 / Fraction(share)) if gp else ceil_sqrt(1 / (2 * Fraction(share)))
    if not numpy.linalg.norm(vector) <= scale * 2.0 ** 40:
        raise DataError(f"{label}: the values have norm above the noise scale x 2^40: the "
                        "noise would be lost in float64 rounding; rescale the data or use a "
                        "smaller budget")
    if gp:
        ledger.spend_gp(label, share)
    else:
        ledger.spend_cgp(label, share)
    if _replay(rng):
        noise = spherical_laplace(rng, (), vector.size) if gp else rng.standard_normal(vector.size)
        return vector + (noise * scale).reshape(vector.shape)
    sample = exact.spherical_laplace if gp else exact.gaussian
    return sample(vector.reshape(-1), scale, rng).reshape(vector.shape)


def scalar_noise(ledger, label, sensitivity, share, *, rng):
    """One noisy scalar query of the given sensitivity: Laplace (GP ledger, epsilon = share)
    or Gaussian (CGP ledger, rho = share). Returns the noise (see ``draw``)."""
    if ledger.model == "GP":
        ledger.spend_gp(label, share)
        return draw(rng, "laplace", ceil_float(Fraction(sensitivity) / Fraction(share)))
    ledger.spend_cgp(label, share)
    return draw(rng, "gaussian", ceil_sqrt(Fraction(sensitivity) ** 2 / (2 * Fraction(share))))
