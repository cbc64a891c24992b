"""Analytic Gaussian mechanism (Balle & Wang 2018, Alg. 1): the smallest sigma.

delta(sigma) = Phi(D/(2 s) - e s/D) - exp(e) Phi(-D/(2 s) - e s/D) is decreasing in s;
it is evaluated in log space (log Phi, expm1) so that large epsilon does not cancel
catastrophically, bisected to the last float, and the answer is confirmed with mpmath
at 50 digits and stepped up until it provably satisfies delta(sigma) <= delta.
"""
import math
from functools import lru_cache

import mpmath
from scipy.special import log_ndtr

EPSILON_RANGE = (0.01, 50.0)
DELTA_RANGE = (1e-12, 0.5)


def delta_of_sigma(sigma, epsilon, sensitivity=1.0):
    """delta(sigma) in float64, stable for large epsilon."""
    a = sensitivity / (2 * sigma)
    b = epsilon * sigma / sensitivity
    log_first = float(log_ndtr(a - b))
    log_second = epsilon + float(log_ndtr(-a - b))
    if log_second >= log_first:
        return 0.0
    return math.exp(log_first) * -math.expm1(log_second - log_first)


def delta_of_sigma_mp(sigma, epsilon, sensitivity=1.0, dps=50):
    """delta(sigma) with mpmath at ``dps`` digits (the reference)."""
    with mpmath.workdps(dps):
        s, e, d = mpmath.mpf(sigma), mpmath.mpf(epsilon), mpmath.mpf(sensitivity)
        a, b = d / (2 * s), e * s / d
        return mpmath.ncdf(a - b) - mpmath.exp(e) * mpmath.ncdf(-a - b)


def analytic_gaussian_sigma(epsilon, delta, sensitivity=1.0):
    """Smallest sigma (never rounded down) with delta(sigma) <= delta for (epsilon, delta)-DP."""
    return _sigma(float(epsilon), float(delta), float(sensitivity))


@lru_cache(maxsize=1024)
def _sigma(epsilon, delta, sensitivity):
    if not EPSILON_RANGE[0] <= epsilon <= EPSILON_RANGE[1]:
        raise ValueError(f"epsilon must lie in [{EPSILON_RANGE[0]}, {EPSILON_RANGE[1]}], got {epsilon}")
    if not DELTA_RANGE[0] <= delta < DELTA_RANGE[1]:
        raise ValueError(f"delta must lie in [{DELTA_RANGE[0]}, {DELTA_RANGE[1]}), got {delta}")
    if not (math.isfinite(sensitivity) and sensitivity > 0):
        raise ValueError(f"sensitivity must be positive and finite, got {sensitivity}")
    low, high = 1e-6, 1.0
    while delta_of_sigma(high, epsilon) > delta:
        low, high = high, 2 * high
    while True:
        middle = (low + high) / 2
        if middle in (low, high):
            break
        if delta_of_sigma(middle, epsilon) > delta:
            low = middle
        else:
            high = middle
    return _scaled_up(_smallest_float_mp(low, high, epsilon, delta), sensitivity)


def _smallest_float_mp(low, high, epsilon, delta):
    """Refine a float bracket with the 50-digit predicate: the smallest float sigma
    with delta(sigma) <= delta, exactly."""
    while delta_of_sigma_mp(high, epsilon) > delta:
        low, high = high, high * (1 + 1e-12)
    low = min(low, high * (1 - 1e-12))
    while delta_of_sigma_mp(low, epsilon) <= delta:
        low *= 1 - 1e-12
    while True:
        middle = (low + high) / 2
        if middle in (low, high):
            return high
        if delta_of_sigma_mp(middle, epsilon) > delta:
            low = middle
        else:
            high = middle


def _scaled_up(sigma, sensitivity):
    """sigma(Delta) = Delta sigma(1); round the product up, never down."""
    value = sigma * sensitivity
    with mpmath.workdps(50):
        if mpmath.mpf(value) < mpmath.mpf(sigma) * mpmath.mpf(sensitivity):
            value = math.nextafter(value, math.inf)
    return value
