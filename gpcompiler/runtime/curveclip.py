"""The curve clip of generated 1-D modules with the plain L2 metric (docs/clipping.md): each
sampled curve is projected onto the L2 ball of radius B before its projection, so the float
error of the projection is at most ETA B (gpcompiler/slack.py: the norm is a pairwise sum
of non-negative terms, NORM_TERMS rounding steps, then a scaling)."""
import math

import numpy

_CLIP_ELEMENTS = 1 << 17  # values per block of curves: the block's temporaries stay in cache
_SAFE = (2.0 ** -800, 2.0 ** 900)  # a sum of squares in here had no term overflow or matter


def clip_curves(t, y, bound, value_dim):
    """Each curve q (samples y (..., S) or (..., S, n) at the times t (..., S)) scaled by
    min(1, B/||q||): the projection onto the L2 ball of radius B of the curve that is zero
    outside its samples. ||q||^2 = sum over pieces of h (a (a + b) + b^2)/3, every term
    >= 0, summed pairwise per curve (NumPy's sum over a contiguous row); a curve whose sum
    leaves _SAFE (an overflow, or terms that underflowed: their total is below 2^-900 of
    the floor, far inside the bound's rounding up) is summed again with its values scaled
    by its largest |y|. Curves inside the ball are kept exactly; the work does not depend on
    how many are (no timing signal of clipping). Blocks keep the temporaries in cache."""
    samples = t.shape[-1]
    count = math.prod(y.shape[:y.ndim - (1 if value_dim == 1 else 2)])
    rows = y.reshape((count, samples, value_dim))
    h = numpy.diff(t, axis=-1)
    h = h.reshape((math.prod(h.shape[:-1]), h.shape[-1], 1))
    factors = numpy.ones(count)
    step = max(1, _CLIP_ELEMENTS // max(1, samples * value_dim))
    work = numpy.empty((2, min(step, count), max(samples - 1, 0), value_dim))
    for start in range(0, count, step):
        block = rows[start:start + step]
        widths = h[start:start + step] if h.shape[0] > 1 else h
        factors[start:start + step] = _curve_factors(block, widths, bound,
                                                     work[:, :block.shape[0]])
    return (rows * factors[:, None, None]).reshape(y.shape)  # the same work whatever y is


def _curve_factors(v, h, bound, work):
    """min(1, B/||q||) for each curve of a block v (rows, S, n), h the piece widths, work
    two buffers of the pieces' shape."""
    if v.shape[1] < 2:  # the zero function
        return numpy.ones(v.shape[0])
    with numpy.errstate(over="ignore", invalid="ignore"):  # such curves are summed again
        squares = _squares(v, h, work)
    scale = numpy.ones(v.shape[0])
    unsafe = ~((squares >= _SAFE[0]) & (squares <= _SAFE[1]))  # also 0, inf and NaN
    if unsafe.any():
        big = numpy.max(numpy.abs(v[unsafe]), axis=(1, 2))
        big = numpy.where(big > 0, big, 1.0)  # a zero curve: its sum stays 0, a factor of 1
        scale[unsafe] = big
        squares[unsafe] = _squares(v[unsafe] / big[:, None, None],
                                   h if h.shape[0] == 1 else h[unsafe], work[:, :big.size])
    with numpy.errstate(over="ignore"):  # B / (a tiny norm) is inf: a factor of 1
        ratio = bound / scale / numpy.sqrt(numpy.where(squares > 0, squares, 1.0))
    return numpy.where(squares > 0, numpy.minimum(1.0, ratio), 1.0)


def _squares(z, h, work):
    """||q||^2 per curve of a block z (rows, S, n): the pairwise sum of the pieces'
    h (a (a + b) + b^2), over 3, in the buffers work."""
    z0, z1 = z[:, :-1], z[:, 1:]
    pieces = numpy.add(z0, z1, out=work[0])
    pieces *= z0
    pieces += numpy.multiply(z1, z1, out=work[1])
    pieces *= h
    return numpy.sum(pieces.reshape(z.shape[0], -1), axis=-1) / 3
