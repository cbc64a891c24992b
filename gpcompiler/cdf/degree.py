"""The Legendre degree K of the direct CDF estimator chosen privately: ``degree="auto"``
(docs/design.md, "CDF degree chosen privately"; docs/choosing.md).

A public share ``SELECTION_SHARE`` of epsilon (pure, delta = 0) runs the exponential
mechanism over the public candidates ``CANDIDATES`` with the score

    u(K) = -sqrt(||c_(K, Kmax]||^2 + (K + 1) sigma_K^2),

c the orthonormal Legendre coefficients (F | e_k) of the empirical CDF on [-1, 1] up to
Kmax = max(CANDIDATES) and sigma_K the public noise scale of one coefficient in the
release at the remaining (epsilon - epsilon_s, delta): u(K) is minus the root expected
squared L2 error of the release at degree K (truncation beyond K up to Kmax, plus noise;
the energy beyond Kmax is common to every K). The release is then the direct estimator at
the chosen K with (epsilon - epsilon_s, delta); by basic composition the whole release is
(epsilon, delta)-DP.

Sensitivity (replace-one, N public): one record moving from x to x' moves c by
Delta = (v(x') - v(x))/N with v(x) = (int_x^1 e_k)_k, the coefficients of 1_[x, 1]. The
tail norm a = ||P c|| (P the projection onto the coordinates K+1..Kmax, K >= 2) moves by
at most ||P Delta|| <= (||Q v(x)|| + ||Q v(x')||)/N <= 2 g_2/N (triangle inequality; Q
the projection onto all coordinates above 2, P = P Q), where g_2^2 = max_x ||Q v(x)||^2
= max_x (1 - x) - v_0(x)^2 - v_1(x)^2 - v_2(x)^2 = 1/8, a polynomial maximised exactly at
x = 0 (tests/test_cdf_degree.py, with SymPy). And a -> sqrt(a^2 + E) has slope
a/sqrt(a^2 + E) <= 1, so |u(K) - u'(K)| <= 2 g_2/N = 1/(sqrt(2) N) for every candidate
(half the Bessel bound sqrt(2)/N on ||Delta||).
"""
from fractions import Fraction

import numpy

from ..rounding import ceil_float, ceil_sqrt, floor_float
from ..runtime import compare
from .gaussian import EPSILON_RANGE, analytic_gaussian_sigma
from .tables import COEFFICIENT_SENSITIVITY_SQUARED

TAIL_SUP_SQUARED_2 = Fraction(1, 8)   # g_2^2 = max_x ||P_(2, oo) v(x)||^2, at x = 0 (exact)
CANDIDATES = (2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)
SELECTION_SHARE = Fraction(1, 5)


def score_sensitivity(count):
    """1/(sqrt(2) N), rounded up: 2 g_2 / N with g_2 = TAIL_SUP_2 (module docstring)."""
    return ceil_sqrt(4 * TAIL_SUP_SQUARED_2 / Fraction(count) ** 2)


def split_budget(epsilon):
    """(epsilon_s, epsilon_r): the selection's public share (rounded down) and the rest
    for the release (rounded down), epsilon_s + epsilon_r <= epsilon exactly."""
    selection = floor_float(Fraction(epsilon) * SELECTION_SHARE)
    release = floor_float(Fraction(epsilon) - Fraction(selection))
    if release < EPSILON_RANGE[0]:
        raise ValueError(f"degree='auto' needs epsilon >= {EPSILON_RANGE[0] / 0.9:.4g} (the "
                         f"release gets {1 - SELECTION_SHARE} of it), got {epsilon!r}")
    return selection, release


def scores(coefficients, count, release_epsilon, delta, candidates):
    """u(K) for each candidate from the coefficients c_0..c_Kmax (not private) and the
    public release budget, whose noise energy at degree K is (K + 1) sigma^2."""
    sigma = analytic_gaussian_sigma(release_epsilon, delta,
                                    ceil_sqrt(COEFFICIENT_SENSITIVITY_SQUARED)) / count
    return tail_scores(coefficients, candidates, [(k + 1.0) * sigma ** 2 for k in candidates])


def tail_scores(coefficients, candidates, noise_energy):
    """-sqrt(||c_(K, Kmax]||^2 + E_K): the tail energy a sum of squares (never a
    difference), E_K public."""
    squares = numpy.asarray(coefficients, dtype=float) ** 2
    tails = numpy.array([squares[k + 1:].sum() for k in candidates])
    return -numpy.sqrt(tails + numpy.asarray(noise_energy, dtype=float))


def exponential_mechanism(values, sensitivity, epsilon, rng):
    """Index i with probability proportional to exp(epsilon u_i / (2 sensitivity))
    (McSherry and Talwar 2007), epsilon-DP when each u_i has that sensitivity: the argmax of
    u_i + G_i with G_i Gumbel of scale 2 sensitivity / epsilon (rounded up), every
    comparison decided exactly (runtime/compare.py; ties have probability 0)."""
    scale = ceil_float(2 * Fraction(sensitivity) / Fraction(epsilon))
    best, index = None, 0
    for i, value in enumerate(values):
        noisy = float(value) + compare.Noise("gumbel", scale, rng)
        if best is None or noisy >= best:
            best, index = noisy, i
    return index


def choose_degree(coefficients, count, epsilon, delta, rng, candidates=CANDIDATES):
    """(K, epsilon_s, epsilon_r): the exponential mechanism's choice with epsilon_s among
    ``candidates`` (public, each >= 2, at most len(coefficients) - 1)."""
    if min(candidates) < 2 or max(candidates) >= len(coefficients):
        raise ValueError(f"degree candidates must lie in 2..{len(coefficients) - 1}")
    selection, release = split_budget(epsilon)
    values = scores(coefficients, count, release, delta, candidates)
    index = exponential_mechanism(values, score_sensitivity(count), selection, rng)
    return candidates[index], selection, release
