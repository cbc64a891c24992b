"""The field clip of generated box modules with the plain L2 metric (docs/clipping.md): each
gridded field is projected onto the L2 ball of radius B before its projection."""
import numpy


def clip_fields(grids, y, kind, bound, value_rank):
    """Each field f scaled by min(1, B/||f||): the projection onto the L2 ball of radius B,
    non-expansive (docs/clipping.md). ||f||^2 = y . (M_1 (x) ... (x) M_k) y with M_i the
    mass matrix of axis i (hat functions for "linear", cell widths for "cells"), after
    scaling by the largest |y| (no overflow); a field inside the ball is kept exactly."""
    first = y.ndim - len(grids) - value_rank
    batch = y.shape[:first]
    big = numpy.max(numpy.abs(y.reshape(batch + (-1,))), axis=-1, initial=0.0)
    safe = numpy.where(big > 0, big, 1.0)
    z = y / safe.reshape(batch + (1,) * (y.ndim - first))
    mass = z
    for axis, t in enumerate(grids):
        mass = _mass(t, mass, first + axis, kind)
    squares = numpy.sum((z * mass).reshape(batch + (-1,)), axis=-1)
    with numpy.errstate(over="ignore"):  # B / (a tiny norm) is inf: a factor of 1
        ratio = bound / safe / numpy.sqrt(numpy.where(squares > 0, squares, 1.0))
    factor = numpy.where(squares > 0, numpy.minimum(1.0, ratio), 1.0)
    return y * factor.reshape(batch + (1,) * (y.ndim - first))


def _mass(t, v, axis, kind):
    """The 1-D mass matrix of the grid t applied along one axis of v."""
    w = numpy.moveaxis(v, axis, -1)
    h = numpy.diff(t)
    if kind == "cells":
        return numpy.moveaxis(w * h, -1, axis)
    out = numpy.zeros_like(w)
    out[..., :-1] += h * (2 * w[..., :-1] + w[..., 1:]) / 6
    out[..., 1:] += h * (w[..., :-1] + 2 * w[..., 1:]) / 6
    return numpy.moveaxis(out, -1, axis)
