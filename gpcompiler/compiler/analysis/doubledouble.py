"""Nonnegative reals as NumPy arrays of double-double mantissas with a separate exponent,
x = (high + low) 2^exponent, 1 <= high < 2 (or x = 0): the certified recurrence of the
monomial change of basis (legendre._MonomialRows.floats) in bulk, any magnitude.

Every operation below takes nonnegative operands, so nothing cancels: a product or a sum
errs by at most 8 u^2 of its result, u = 2^-53 (Dekker's exact product and Knuth's exact
sum, one final rounding of the low parts), and aligning exponents drops at most
2^-1074 of a result >= 1.
"""
import math

import gmpy2
import numpy

UNIT2 = 2.0 ** -106                # u^2, u = 2^-53
ZERO_EXPONENT = -(1 << 40)         # the exponent of 0: every other exponent wins max()
_SPLIT = 134217729.0               # 2^27 + 1


def from_ratios(numerators, denominators):
    """(high, low, exponent) arrays of the nonnegative p/q, p and q integers (lists, or
    lists of lists of one length), each within 2 u^2 of it: the quotient truncated to
    about 110 bits, split into two float64s."""
    numerators, denominators = (numpy.array(v, dtype=object) for v in (numerators,
                                                                      denominators))
    high, low, exponent = numpy.zeros(numerators.shape), numpy.zeros(numerators.shape), \
        numpy.full(numerators.shape, ZERO_EXPONENT)
    for index, p in numpy.ndenumerate(numerators):
        if p:
            q = denominators[index]
            shift = 110 - p.bit_length() + q.bit_length()
            n = (p << shift) // q if shift >= 0 else p // (q << -shift)
            high[index] = float(n)
            low[index], exponent[index] = float(n - int(high[index])), -shift
    return normalize(high, low, exponent)


def multiply(x, y):
    """x y, not normalized (1 <= high < 4 for normalized x and y), |low| <= ulp(high)/2."""
    (xh, xl, xe), (yh, yl, ye) = x, y
    high = xh * yh
    xa, ya = _split(xh), _split(yh)
    error = ((xa[0] * ya[0] - high) + xa[0] * ya[1] + xa[1] * ya[0]) + xa[1] * ya[1]
    error += xh * yl + xl * yh
    return _fast_sum(high, error) + (numpy.where(high > 0, xe + ye, ZERO_EXPONENT),)


def add(terms, normal=True):
    """The sum over the first axis of nonnegative terms (high, low, exponent arrays of one
    shape, high >= 1 or 0), normalized, or else with high >= 1 at most the sum of the
    terms' highs (a recurrence normalizes every few steps: high stays far below 2^996,
    where Dekker's split is exact)."""
    high, low, exponent = terms
    top = exponent.max(axis=0)
    shift = numpy.maximum(exponent - top, -1100)
    high, low = numpy.ldexp(high, shift), numpy.ldexp(low, shift)
    total, rest = high[0], low[0]
    for h, l in zip(high[1:], low[1:]):
        new = total + h
        back = new - total
        error = (total - (new - back)) + (h - back) + rest + l
        total, rest = _fast_sum(new, error)
    return normalize(total, rest, top) if normal else (total, rest, top)


def normalize(high, low, exponent):
    """The same numbers with 1 <= high < 2 (exponent ZERO_EXPONENT for 0)."""
    _, shift = numpy.frexp(high)
    shift = shift - 1
    return (numpy.ldexp(high, -shift), numpy.ldexp(low, -shift),
            numpy.where(high > 0, exponent + shift, ZERO_EXPONENT))


def round_certified(x, delta):
    """(float64 values, certain): the float64 nearest to each true value t, given that
    |x - t| <= delta t; ``certain`` is False where that interval could round otherwise
    (then the value is not to be used)."""
    high, low, exponent = x
    ulp = numpy.spacing(high)
    gap = numpy.where((low < 0) & (high == 1), ulp / 2, ulp)     # the float64 next to high
    certain = (numpy.abs(low) < gap / 2 - 2 * delta * high) | (high == 0)
    values = numpy.ldexp(high, numpy.clip(exponent, -1100, 1023))
    huge = exponent >= 1024                  # t >= (1 - delta - u) 2^1024 > 2^1024 - 2^970
    values[huge], certain[huge] = math.inf, True
    zero = exponent < -1076                  # t < (1 + delta) 2^-1075: rounds to 0
    values[zero], certain[zero] = 0.0, True
    with gmpy2.context(precision=128):       # subnormal: the interval, rounded by MPFR
        low_end, high_end = 1 - gmpy2.mpfr(2 * delta), 1 + gmpy2.mpfr(2 * delta)
        for i in numpy.flatnonzero(~zero & (exponent < -1022)).tolist():
            value = gmpy2.mul_2exp(gmpy2.mpfr(high[i]) + gmpy2.mpfr(low[i]), int(exponent[i]))
            values[i] = float(value * low_end)
            certain[i] = values[i] == float(value * high_end)
    return values, certain


def _split(value):
    """Dekker's split of float64 values into two halves of 26 bits: value = a + b."""
    scaled = _SPLIT * value
    a = scaled - (scaled - value)
    return a, value - a


def _fast_sum(high, low):
    """(s, e) with s + e = high + low exactly, |e| <= ulp(s)/2, when |low| <= |high|."""
    total = high + low
    return total, low - (total - high)
