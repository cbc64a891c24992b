"""Noise of the local mechanisms (paper Thm 3.2, 3.3), charged to a ledger first; every
released vector is clipped to a public bound first (docs/clipping.md). Releases and noisy
comparisons are exact (gpcompiler/runtime/exact.py); the auditor's replay objects
(``audit_replay = True``) draw the same laws as floats, to read scales and script decisions."""
import math
from fractions import Fraction

import numpy

from ..runtime.rounding import ceil_float, ceil_sqrt
from ..runtime import compare, exact
from ..runtime.clip import clip_rows
from ..runtime.entropy import default_generator


def spherical_laplace(rng, shape, dimension):
    """Float simulation of Z with density ~ exp(-|z|) in R^dimension (the auditor's replays
    and batched runs): radius Gamma(d, 1), direction a normalized Gaussian vector."""
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
    """One lazily sampled scalar noise scale * Z (Z Laplace or normal): a compare.Noise,
    whose sums and comparisons are decided as the real numbers decide them."""
    if _replay(rng):
        return rng.laplace(0.0, scale) if kind == "laplace" else rng.standard_normal() * scale
    return compare.Noise(kind, scale, rng)


def clip(vector, bound):
    """vector * min(1, B/||vector||) over all its entries: the projection onto the Euclidean
    ball of radius B (runtime/clip.py, clip_rows: the generated modules' coefficient clip)."""
    vector = numpy.asarray(vector, dtype=float)
    return clip_rows(vector.reshape(-1), bound).reshape(vector.shape)


def release_scale(model, share):
    """The noise scale of a release of parameter ``share``: 1/epsilon (GP), 1/sqrt(2 rho)
    (CGP), rounded up by exact arithmetic."""
    if model == "GP":
        return ceil_float(1 / Fraction(share))
    return ceil_sqrt(1 / (2 * Fraction(share)))


def privatize_vector(vector, ledger, label, share, *, rng, bound=math.inf, eta=None):
    """round_gamma(clip(vector, bound) + Z/epsilon), one spherical Laplace vector over all
    coordinates (GP ledger, epsilon = share), or + N(0, I)/sqrt(2 rho) (CGP ledger, rho =
    share), exactly; the step is charged to ``ledger`` before anything is drawn, with its
    bound B, the slack 2 eta B and the lattice step gamma of its noise scale (``bound``
    math.inf: no clip, for the auditor's probes of the noise with zero vectors; ``eta``
    None: no slack is stated, as for the baseline's interpolated values)."""
    gp = ledger.model == "GP"
    scale = release_scale(ledger.model, share)
    clipped = clip(vector, bound)
    if gp:
        ledger.spend_gp(label, share, ("spherical Laplace", scale, None))
    else:
        ledger.spend_cgp(label, share, ("Gaussian", scale, None))
    slack = (None if eta is None or not math.isfinite(bound)
             else ceil_float(2 * Fraction(eta) * Fraction(bound)))
    ledger.note_release(label, bound, slack, exact.lattice(scale))
    return _add_noise(clipped, gp, scale, rng)


def _add_noise(vector, gp, scale, rng):
    """round_gamma(vector + scale Z) exactly, Z spherical Laplace (GP) or standard normal
    (CGP); float noise for the auditor's replay objects."""
    if _replay(rng):
        noise = spherical_laplace(rng, (), vector.size) if gp else rng.standard_normal(vector.size)
        return vector + (noise * scale).reshape(vector.shape)
    sample = exact.spherical_laplace if gp else exact.gaussian
    return sample(vector.reshape(-1), scale, rng).reshape(vector.shape)


def scalar_noise(ledger, label, sensitivity, share, *, rng):
    """One noisy scalar query of the given sensitivity: Laplace (GP ledger, epsilon = share)
    or Gaussian (CGP ledger, rho = share). Returns the noise (see ``draw``)."""
    if ledger.model == "GP":
        scale = ceil_float(Fraction(sensitivity) / Fraction(share))
        ledger.spend_gp(label, share, ("Laplace", scale, sensitivity))
        return draw(rng, "laplace", scale)
    scale = ceil_sqrt(Fraction(sensitivity) ** 2 / (2 * Fraction(share)))
    ledger.spend_cgp(label, share, ("Gaussian", scale, sensitivity))
    return draw(rng, "gaussian", scale)
