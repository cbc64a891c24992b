"""The curve clip of generated 1-D modules with the L2, weighted L2(w) and Sobolev H^1
metrics (docs/clipping.md): each sampled curve is projected onto the ball of radius B of
the spec's metric before its projection, so the float error of the projection is at most
ETA B (gpcompiler/slack.py: the norm is a pairwise sum of terms >= 0 per piece, NORM_TERMS
rounding steps, then a scaling)."""
import math

import numpy

_CLIP_ELEMENTS = 1 << 17  # values per block of curves: the block's temporaries stay in cache
_SAFE = (2.0 ** -800, 2.0 ** 900)  # a sum of squares in here had no term overflow or matter


def clip_curves(t, y, bound, value_dim, sobolev=False, masses=None):
    """The curves q (samples y (..., S) or (..., S, n) at the times t (..., S)) projected
    onto the ball of radius B of L2 (of H^1 if ``sobolev``: ||q||^2 + ||q'||^2, the
    derivative taken on each run between jumps; of L2(w) if ``masses`` (3, ..., S - 1) are
    given: per piece int w hat_a^2, int w hat_a hat_b, int w hat_b^2, and ||q||_w^2 the sum
    of a^2 m_00 + 2ab m_01 + b^2 m_11, each >= 0 in exact arithmetic), q -> min(1, B/||q||) q,
    as (values, factors): the factor
    of every curve (y's batch shape) multiplies its coefficients after the contraction (the
    projection is linear; one rounding per coefficient instead of one per sample), except
    for extreme curves (their sum of squares leaves _SAFE: an overflow, or terms that
    underflowed, below 2^-900 of the floor; or a factor below 2^-960), whose values are
    scaled here (in a copy) and whose factor is then 1. ||q||^2 = sum over pieces of
    h (a (a + b) + b^2)/3 (+ (b - a)^2/h for H^1, pieces of width h > 0), every term >= 0,
    summed pairwise per curve (NumPy's sum over a contiguous row); an extreme curve is
    summed again with its values scaled by a power of two 2^k (exact), k from its largest
    term (_extreme_squares). Curves inside the ball have the factor 1
    (kept exactly); the work does not depend on how many are. Blocks of curves keep the
    temporaries in cache."""
    samples = t.shape[-1]
    batch = y.shape[:y.ndim - (1 if value_dim == 1 else 2)]
    count = math.prod(batch)
    rows = y.reshape((count, samples, value_dim))
    h = numpy.diff(t, axis=-1)
    h = h.reshape((math.prod(h.shape[:-1]), h.shape[-1], 1))
    if masses is not None:  # the widths' place: (3, rows or 1, pieces, 1)
        h = numpy.reshape(masses, (3,) + h.shape)
    factors, exponent, inner = numpy.ones(count), numpy.zeros(count, int), numpy.zeros(count)
    step = max(1, _CLIP_ELEMENTS // max(1, samples * value_dim))
    work = numpy.empty((2, min(step, count), max(samples - 1, 0), value_dim))
    for start in range(0, count, step):
        part = slice(start, start + step)
        factors[part], exponent[part], inner[part] = _curve_factors(
            rows[part], _rows(h, part), bound, work[:, :rows[part].shape[0]], sobolev)
    with numpy.errstate(over="ignore"):  # an overflow is a factor > 1: inside the ball
        outside = numpy.flatnonzero((inner > 0) & (numpy.ldexp(inner, -exponent) < 1.0))
    if outside.size:  # a copy of the batch (the cost of an extreme curve: docs/threat-model.md)
        rows = rows.copy()
        with numpy.errstate(over="ignore"):  # a value on pieces of width 0 alone: taken as 0
            scaled = numpy.ldexp(rows[outside], -exponent[outside, None, None])
        scaled[~numpy.isfinite(scaled)] = 0.0
        rows[outside] = scaled * inner[outside, None, None]
    return rows.reshape(y.shape), factors.reshape(batch)


def _curve_factors(v, h, bound, work, sobolev):
    """(factors, exponent, inner) for each curve of a block v (rows, S, n), h the piece
    widths, work two buffers of the pieces' shape: min(1, B/||q||); for an extreme curve
    (its sum of squares leaves _SAFE, or that factor would be below 2^-960) a factor of 1,
    a power of two 2^k bounding its terms (k its exponent) and inner = B/||q 2^-k||
    instead: it is outside the ball when inner < 2^k, and (q 2^-k) inner is then its clip
    (B/2^k is never formed); inner = 0 for the others (and for a zero or NaN curve)."""
    count = v.shape[0]
    factors, exponent, inner = numpy.ones(count), numpy.zeros(count, int), numpy.zeros(count)
    if v.shape[1] < 2:  # the zero function
        return factors, exponent, inner
    with numpy.errstate(over="ignore", invalid="ignore"):  # such curves are summed again
        squares = _squares(v, h, work, sobolev)
        ratio = bound / numpy.sqrt(numpy.where(squares > 0, squares, 1.0))
    factors = numpy.where(squares > 0, numpy.minimum(1.0, ratio), 1.0)
    extreme = ~((squares >= _SAFE[0]) & (squares <= _SAFE[1])) | (factors < 2.0 ** -960)
    if extreme.any():
        rows = numpy.flatnonzero(extreme)
        power, scaled = _extreme_squares(v[rows], _rows(h, rows), sobolev)
        keep = power > _NO_TERM  # not zero, NaN or inf (refused later)
        rows, power, scaled = rows[keep], power[keep], scaled[keep]
        factors[rows], exponent[rows] = 1.0, power
        inner[rows] = numpy.where(scaled > 0, bound / numpy.sqrt(
            numpy.where(scaled > 0, scaled, 1.0)), 0.0)  # a sum of 0: inside, as above
    return factors, exponent, inner


_NO_TERM = -(1 << 20)  # the term exponent of a curve with no term > 0 (or a non-finite one)


def _extreme_squares(v, h, sobolev):
    """(k, ||q 2^-k||^2) per extreme curve of v (rows, S, n): 2^-k brings its largest term
    near 1, k from every piece's bound of its term (_term_exponent: no value or width
    enters alone, so a spike on a subnormal width cannot hide the rest of the curve); the
    terms of q 2^-k then lie in [0, 1] and are summed pairwise (_scaled_squares). A sum
    still below _SAFE (only a weighted curve, whose terms can cancel) lowers k, at most
    four times (each pass gains at least 2^900). k = _NO_TERM for a curve with no term."""
    power = _term_exponent(v, h, sobolev)
    for _ in range(5):
        scaled = _scaled_squares(v, power, h, sobolev)
        low = (scaled < _SAFE[0]) & (power > _NO_TERM)
        if not low.any():
            break
        shift = numpy.where(scaled >= 2.0 ** -1000, (1 - numpy.frexp(scaled)[1]) // 2, 450)
        power = numpy.where(low, power - shift, power)
    return power, scaled


def _term_exponent(v, h, sobolev):
    """Per curve of v (rows, S, n): the least k with every term of q 2^-k at most 1, from
    each piece's exponents alone (frexp: no overflow): h (a (a + b) + b^2) < 3 M^2 h with
    M = max(|a|, |b|); 3 (b - a)^2 / h for H^1; (a, b) m (a, b)^T <= 4 M^2 max |m| with
    masses m. _NO_TERM where no piece has a term > 0 or a value is not finite."""
    a, b = v[:, :-1], v[:, 1:]
    with numpy.errstate(invalid="ignore"):
        big = numpy.maximum(numpy.abs(a), numpy.abs(b))
    e_big = numpy.frexp(big)[1]
    if h.ndim == 4:  # masses (3, ...): the largest |m| of each piece
        width = numpy.max(numpy.abs(h), axis=0)
        bound = 2 * e_big + numpy.frexp(width)[1] + 3
    else:
        width = h
        bound = 2 * e_big + numpy.frexp(h)[1] + 2
        if sobolev:
            gap = numpy.abs(b * 0.5 - a * 0.5)  # (b - a)/2: no overflow
            slope = 2 * (numpy.frexp(gap)[1] + 1) - numpy.frexp(h)[1] + 4
            bound = numpy.maximum(bound, numpy.where(gap > 0, slope, _NO_TERM))
    bound = numpy.where((big > 0) & (width > 0), bound, _NO_TERM)
    power = -(-numpy.max(bound.reshape(v.shape[0], -1), axis=-1, initial=_NO_TERM) // 2)
    finite = numpy.isfinite(v).all(axis=(1, 2))
    return numpy.where(finite & (power > _NO_TERM // 2), power, _NO_TERM)


def _scaled_squares(v, power, h, sobolev):
    """||q 2^-k||^2 per curve, each term formed width (or mass) first, so that no product
    overflows when the term is at most 1: h a (a + b) + h b b, over 3 (+ the H^1 slopes'
    3 ((b - a)/sqrt(h))^2); with masses, a (a m_00 + 2 b m_01) + b (b m_11). A value on
    pieces of width 0 alone (no term) may overflow when scaled: it is taken as 0."""
    with numpy.errstate(over="ignore"):
        z = numpy.ldexp(v, -numpy.maximum(power, _NO_TERM // 2)[:, None, None])
    z = numpy.where(numpy.isfinite(z), z, 0.0)
    z0, z1 = z[:, :-1], z[:, 1:]
    if h.ndim == 4:
        pieces = (z1 * h[1] * 2.0 + z0 * h[0]) * z0 + z1 * (z1 * h[2])
        return numpy.sum(pieces.reshape(z.shape[0], -1), axis=-1)
    pieces = (z0 * h) * (z0 + z1) + (z1 * h) * z1
    if sobolev:
        with numpy.errstate(divide="ignore", invalid="ignore"):
            slopes = (z1 - z0) / numpy.sqrt(h)
        pieces = pieces + numpy.where(h > 0, slopes * slopes * 3.0, 0.0)
    return numpy.sum(pieces.reshape(z.shape[0], -1), axis=-1) / 3


def _rows(h, rows):
    """The piece widths (or masses: a leading axis of 3) of some curves: all when shared."""
    shared = h.shape[-3] == 1
    return h if shared else (h[rows] if h.ndim == 3 else h[:, rows])


def _squares(z, h, work, sobolev=False):
    """||q||^2 per curve of a block z (rows, S, n): the pairwise sum of the pieces'
    h (a (a + b) + b^2) (+ 3 ((b - a)/sqrt(h))^2 for H^1 where h > 0), over 3, in the buffers
    work; with masses m (h of shape (3, ...)), the sum of a (a m_00 + 2 b m_01) + b^2 m_11."""
    z0, z1 = z[:, :-1], z[:, 1:]
    if h.ndim == 4:
        pieces = numpy.multiply(z1, h[1], out=work[0])
        pieces *= 2.0
        pieces += numpy.multiply(z0, h[0], out=work[1])
        pieces *= z0
        pieces += z1 * z1 * h[2]
        return numpy.sum(pieces.reshape(z.shape[0], -1), axis=-1)
    pieces = numpy.add(z0, z1, out=work[0])
    pieces *= z0
    pieces += numpy.multiply(z1, z1, out=work[1])
    pieces *= h
    if sobolev:  # ((b - a)/sqrt(h))^2: no underflow of (b - a)^2 when h is tiny
        slopes = numpy.subtract(z1, z0, out=work[1])
        numpy.divide(slopes, numpy.sqrt(h), out=slopes,
                     where=numpy.broadcast_to(h > 0, slopes.shape))
        slopes *= slopes
        slopes *= 3.0
        pieces += numpy.where(h > 0, slopes, 0.0)
    return numpy.sum(pieces.reshape(z.shape[0], -1), axis=-1) / 3
