"""The coefficient clip (docs/clipping.md): the projection onto a ball that every release
applies to its coefficients before the noise, in the package and in generated modules
alike. It is non-expansive, so the mechanism's proof holds with the clipped input; its
float error (the norm's d-term sum, then a scaling: 3 roundings) is part of ETA
(gpcompiler/compiler/slack.py)."""
import numpy

_CLIP_SAFE = (2.0 ** -900, 2.0 ** 900)  # a sum of squares in here had no term overflow or matter


def clip_rows(c, bound):
    """c * min(1, B/||c||) per row (last axis): the projection onto the Euclidean ball of
    radius B, non-expansive in the metric of orthonormal coordinates. ||c||^2 is one sum of
    squares per row (terms >= 0: relative error gamma_d in any order); a row whose sum
    leaves _CLIP_SAFE (an overflow, or terms that underflowed), unless it is zero, is clipped
    again after scaling by its largest entry. Each row's result depends on that row alone;
    a row inside the ball is kept exactly, and the work does not depend on how many are."""
    rows = c.reshape(-1, c.shape[-1]) if c.ndim else c.reshape(1, 1)
    with numpy.errstate(over="ignore"):  # such rows are clipped again below
        squares = _sum_squares(rows)
    safe = (squares >= _CLIP_SAFE[0]) & (squares <= _CLIP_SAFE[1])
    outside = safe & (squares > bound * bound)
    factor = numpy.where(outside, bound / numpy.sqrt(numpy.where(outside, squares, 1.0)), 1.0)
    out = rows * factor[:, None]  # 1 inside the ball: kept exactly
    rescue = ~safe | (factor < 2.0 ** -960)  # a factor near the subnormals: scaled instead
    if rescue.any():
        kept = rows[rescue]  # a zero row stays as it is, and a non-finite one (refused later)
        rescue[rescue] = kept.any(axis=-1) & numpy.isfinite(kept).all(axis=-1)
        out[rescue] = _clip_scaled(rows[rescue], bound)
    return out.reshape(c.shape)


def _clip_scaled(c, bound):
    """clip_rows with every row first scaled by its largest |entry| (no overflow)."""
    big = numpy.max(numpy.abs(c), axis=-1, initial=0.0)
    unit = c / numpy.where(big > 0, big, 1.0)[..., None]
    norm = numpy.sqrt(_sum_squares(unit))  # ||c|| / big, in [1, sqrt(d)]
    with numpy.errstate(over="ignore"):
        outside = big * norm > bound
    scaled = unit * (bound / numpy.where(norm > 0, norm, 1.0))[..., None]  # B/||c|| never formed
    return numpy.where(outside[..., None], scaled, c)


def _sum_squares(rows):
    """Each row's sum of squares: the squares formed first, then NumPy's pairwise sum of a
    contiguous row (eight partial sums, halves above 128 terms). It has no SIMD lanes and no
    fused multiply-add, so it is the same on every platform, and the C runtime's
    gp_sum_squares gives its bits (docs/reference/c.md)."""
    return numpy.sum(numpy.multiply(rows, rows, order="C"), axis=-1)  # rows of any layout
