"""The field clip of generated box modules (docs/clipping.md): each gridded field is
projected onto the ball of radius B of the spec's metric (L2, L2(w) with a separable
weight, H^1) before its projection."""
import numpy


def clip_fields(grids, y, kind, bound, value_rank, masses=None, sobolev=False):
    """Each field f scaled by min(1, B/||f||): the projection onto the L2 ball of radius B
    (of L2(w) for a separable weight w = w_1 ... w_k with the axes' ``masses``: per piece
    int w_i hat_a^2, int w_i hat_a hat_b, int w_i hat_b^2, or int w_i over a cell),
    non-expansive (docs/clipping.md). ||f||^2 = y . (M_1 (x) ... (x) M_k) y with M_i the
    mass matrix of axis i (hat functions for "linear", cell widths for "cells"). H^1
    (``sobolev``, "linear"): ||f||^2 + sum_i ||d_i f||^2, ||d_i f||^2 the same form of the
    differences along axis i over sqrt(h), with the identity in place of M_i. The form is
    computed after scaling y by a power of two 2^-k (exact) that brings the largest |y| and,
    for H^1, the largest such difference below 1 (no overflow); a field beyond the ball is
    (y 2^-k) B/||y 2^-k|| (B/2^k never formed), a field inside it is kept exactly."""
    first = y.ndim - len(grids) - value_rank
    batch = y.shape[:first]
    spread = (1,) * (y.ndim - first)
    big = numpy.max(numpy.abs(y.reshape(batch + (-1,))), axis=-1, initial=0.0)
    exponent = numpy.frexp(big)[1]
    z = numpy.ldexp(y, -exponent.reshape(batch + spread))
    if sobolev:
        steep = numpy.max([numpy.max(numpy.abs(d).reshape(batch + (-1,)), axis=-1, initial=0.0)
                           for d in (_slopes(t, z, first + i) for i, t in enumerate(grids))],
                          axis=0)
        exponent = exponent + numpy.maximum(numpy.frexp(steep)[1], 0)
        z = numpy.ldexp(y, -exponent.reshape(batch + spread))
    squares = _form(grids, z, first, kind, masses, batch)
    if sobolev:
        for axis, t in enumerate(grids):
            squares = squares + _form(grids, _slopes(t, z, first + axis), first, kind, masses,
                                      batch, skip=axis)
    inner = bound / numpy.sqrt(numpy.where(squares > 0, squares, 1.0))
    with numpy.errstate(over="ignore"):  # an overflow is a factor > 1: inside the ball
        outside = (squares > 0) & (numpy.ldexp(inner, -exponent) < 1.0)
    return numpy.where(outside.reshape(batch + spread), z * inner.reshape(batch + spread), y)


def _form(grids, z, first, kind, masses, batch, skip=None):
    """z . (M_1 (x) ... (x) M_k) z per field, the identity in place of M_skip."""
    mass = z
    for axis, t in enumerate(grids):
        if axis != skip:
            mass = _mass(t, mass, first + axis, kind, None if masses is None else masses[axis])
    return numpy.sum((z * mass).reshape(batch + (-1,)), axis=-1)


def _slopes(t, v, axis):
    """The differences of v along one axis over the square root of the piece widths."""
    w = numpy.moveaxis(v, axis, -1)
    return numpy.moveaxis(numpy.diff(w, axis=-1) / numpy.sqrt(numpy.diff(t)), -1, axis)


def _mass(t, v, axis, kind, masses=None):
    """The 1-D mass matrix of the grid t (weighted: from its ``masses``) applied along one
    axis of v."""
    w = numpy.moveaxis(v, axis, -1)
    h = numpy.diff(t)
    if kind == "cells":
        return numpy.moveaxis(w * (h if masses is None else masses[0]), -1, axis)
    out = numpy.zeros_like(w)
    if masses is None:
        out[..., :-1] += h * (2 * w[..., :-1] + w[..., 1:]) / 6
        out[..., 1:] += h * (w[..., :-1] + 2 * w[..., 1:]) / 6
    else:
        out[..., :-1] += masses[0] * w[..., :-1] + masses[1] * w[..., 1:]
        out[..., 1:] += masses[1] * w[..., :-1] + masses[2] * w[..., 1:]
    return numpy.moveaxis(out, -1, axis)
