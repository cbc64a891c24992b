"""The coefficient clip (docs/clipping.md): the projection onto a ball that every release
applies to its coefficients before the noise, in the package and in generated modules
alike. It is non-expansive, so the mechanism's proof holds with the clipped input; its
float error (a scaling: 3 roundings, and the norm's) is part of ETA (gpcompiler/slack.py)."""
import numpy


def clip_rows(c, bound):
    """c * min(1, B/||c||) per row (last axis): the projection onto the Euclidean ball of
    radius B, non-expansive in the metric of orthonormal coordinates; each row scaled by
    its largest entry first (no overflow), a row inside the ball kept exactly."""
    big = numpy.max(numpy.abs(c), axis=-1, initial=0.0)
    unit = c / numpy.where(big > 0, big, 1.0)[..., None]
    norm = numpy.sqrt(numpy.einsum("...i,...i->...", unit, unit))  # ||c|| / big, in [1, sqrt(d)]
    with numpy.errstate(over="ignore"):
        outside = big * norm > bound
    scaled = unit * (bound / numpy.where(norm > 0, norm, 1.0))[..., None]  # B/||c|| never formed
    return numpy.where(outside[..., None], scaled, c)
