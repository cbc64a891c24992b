"""Directed rounding of exact values to float64: privacy parameters are rounded down,
noise scales and sensitivities up, so a float never promises more privacy than is spent."""
import math
import sys
from fractions import Fraction


def floor_float(value):
    """The largest float <= an exact value."""
    value = Fraction(value)
    result = float(value)
    return math.nextafter(result, -math.inf) if Fraction(result) > value else result


def ceil_float(value):
    """The smallest float >= an exact value (noise scales); OverflowError past float64."""
    value = Fraction(value)
    if value > Fraction(sys.float_info.max):
        raise OverflowError("the value exceeds the largest float64")
    result = float(value)
    return math.nextafter(result, math.inf) if Fraction(result) < value else result


def ceil_sqrt(value):
    """The smallest float whose square is >= an exact value (Gaussian scales,
    sensitivities); OverflowError past float64. The first guess is the square root of
    value 4^-k, a normal float, scaled by 2^k: rounded twice, it is within one spacing of
    the float grid (subnormal ones included) of sqrt(value) and never above the answer, so
    the loop steps at most twice whatever the value's size."""
    value = Fraction(value) if isinstance(value, (int, float, Fraction)) else Fraction(str(value))
    if value > Fraction(sys.float_info.max) ** 2:
        raise OverflowError("the square root exceeds the largest float64")
    k = (value.numerator.bit_length() - value.denominator.bit_length()) // 2
    result = math.ldexp(math.sqrt(float(value / Fraction(4) ** k)), k)
    while Fraction(result) ** 2 < value:
        result = math.nextafter(result, math.inf)
    return result
