"""Analytic Gaussian mechanism (Balle & Wang 2018, Alg. 1): the smallest sigma.

delta(sigma) = Phi(D/(2 s) - e s/D) - exp(e) Phi(-D/(2 s) - e s/D) is decreasing in s;
it is evaluated in log space (log Phi, expm1) so that large epsilon does not cancel
catastrophically, bisected to the last float, and the answer is confirmed with mpmath
at 50 digits (the bracket widened by doubling steps if needed) until it provably satisfies
delta(sigma) <= delta. Every search is bounded: by a proof, or by a limit and an error.
"""
import math
from functools import lru_cache

import mpmath
from scipy.special import log_ndtr

EPSILON_RANGE = (0.01, 50.0)
DELTA_RANGE = (1e-12, 0.5)
DOUBLINGS = 10     # sigma < 2^10 at sensitivity 1 over the ranges (_doubled_bracket)
WIDENINGS = 30     # relative steps 1e-12 2^k up to 5e-4 (_widened)


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
    low, high = _bisect(lambda sigma: delta_of_sigma(sigma, epsilon) > delta,
                        *_doubled_bracket(epsilon, delta))
    return _scaled_up(_smallest_float_mp(low, high, epsilon, delta), sensitivity)


def _doubled_bracket(epsilon, delta):
    """(2^(k-1), or 1e-6 for k = 0, where delta(sigma) ~ 1 > delta; 2^k) for the first
    k <= DOUBLINGS with delta(2^k) <= delta. sigma falls as epsilon or delta grows, so over
    the ranges it is at most its value at epsilon = 0.01, delta = 1e-12: 579, below the
    classical sqrt(2 ln(1.25/delta))/epsilon = 745 (Dwork & Roth 2014, Thm. A.1) and 2^10.
    A correct delta(sigma) never reaches the limit."""
    for k in range(DOUBLINGS + 1):
        if delta_of_sigma(2.0 ** k, epsilon) <= delta:
            return (2.0 ** (k - 1) if k else 1e-6), 2.0 ** k
    raise ArithmeticError(f"analytic Gaussian: delta(2^{DOUBLINGS}) > delta = {delta!r} at "
                          f"epsilon = {epsilon!r} (sigma is below 745 over the ranges)")


def _bisect(exceeds, low, high):
    """Adjacent floats (low, high) with exceeds(low) and not exceeds(high), from a bracket
    with these ends. At most 2,100 steps: the gap of two floats at most halves (up to half
    a unit in the last place) each step, from below 2^1024 to one spacing >= 2^-1074."""
    while True:
        middle = (low + high) / 2
        if middle in (low, high):
            return low, high
        if exceeds(middle):
            low = middle
        else:
            high = middle


def _smallest_float_mp(low, high, epsilon, delta):
    """Refine a float bracket with the 50-digit predicate: the smallest float sigma
    with delta(sigma) <= delta, exactly. The bracket is widened first, if the 50-digit
    predicate disagrees at an end, by relative steps 1e-12 2^k (:func:`_widened`)."""
    def exceeds(sigma):
        return delta_of_sigma_mp(sigma, epsilon) > delta
    high = _widened(high, 1, exceeds, epsilon, delta)
    low = _widened(min(low, high * (1 - 1e-12)), -1, lambda sigma: not exceeds(sigma),
                   epsilon, delta)
    return _bisect(exceeds, low, high)[1]


def _widened(sigma, sign, wrong, epsilon, delta):
    """The first of sigma, sigma (1 + sign 1e-12 2^k), k = 0, 1, ..., WIDENINGS - 1, at
    which ``wrong`` is false. The float64 delta(sigma) agrees with the 50-digit one to far
    better than 1e-12 of sigma, so k = 0 suffices; a relative disagreement beyond
    1e-12 2^(WIDENINGS - 1) ~ 5e-4 is an error, never a search 1e-12 at a time."""
    for k in range(-1, WIDENINGS):
        point = sigma if k < 0 else sigma * (1 + sign * 1e-12 * 2.0 ** k)
        if not wrong(point):
            return point
    raise ArithmeticError(f"analytic Gaussian: the float64 and 50-digit delta(sigma) "
                          f"disagree by more than 5e-4 of sigma = {sigma!r} at "
                          f"epsilon = {epsilon!r}, delta = {delta!r}")


def _scaled_up(sigma, sensitivity):
    """sigma(Delta) = Delta sigma(1); round the product up, never down."""
    value = sigma * sensitivity
    with mpmath.workdps(50):
        if mpmath.mpf(value) < mpmath.mpf(sigma) * mpmath.mpf(sensitivity):
            value = math.nextafter(value, math.inf)
    return value
