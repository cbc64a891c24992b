"""The Legendre degree K of the direct CDF estimator chosen privately: ``degree="auto"``
(docs/design.md, "CDF degree chosen privately"; docs/howto/choose-basis-and-budget.md).

A public share ``SELECTION_SHARE`` of epsilon (pure, delta = 0) runs the exponential
mechanism over the public candidates ``CANDIDATES`` with the score

    u(K) = -sqrt((K + 1) (||c_(K, Kmax]||^2 + lambda sigma^2)),

c the orthonormal Legendre coefficients (F | e_k) of the empirical CDF on [-1, 1] up to
Kmax = max(CANDIDATES), sigma the public noise scale of one coefficient in the release at
the remaining (epsilon - epsilon_s, delta) and lambda = ``NOISE_WEIGHT``: u(K) is minus a
proxy of the release's Kolmogorov error at degree K. The truncation's sup error is about
a sqrt(K + 1) ||c_(K, oo)|| (a degree-K truncation error lives on scales 1/K) and the
noise's, after the isotonic post-processing, about b sigma sqrt(K + 1); lambda = (b/a)^2
= 7.9, rounded to 8, from a = 0.754, b = 2.12 measured on synthetic distributions
(docs/howto/choose-basis-and-budget.md; experiments/auto_degree.py), not on the real
columns. The release is then the direct estimator at the chosen K with (epsilon -
epsilon_s, delta); by basic composition the whole release is (epsilon, delta)-DP.

Sensitivity (replace-one, N public): one record moving from x to x' moves c by
Delta = (v(x') - v(x))/N with v(x) = (int_x^1 e_k)_k, the coefficients of 1_[x, 1]. The
tail norm a_K = ||P_K c|| (P_K the projection onto the coordinates K+1..Kmax) moves by at
most ||P_K Delta|| <= 2 g_K/N, g_K^2 = max_x ||P_K v(x)||^2 (triangle inequality), and
a -> sqrt((K + 1)(a^2 + E)) has slope at most sqrt(K + 1), so u(K) moves by at most
2 sqrt(K + 1) g_K / N. For K = 2, g_2^2 <= max_x (1 - x) - v_0(x)^2 - v_1(x)^2 - v_2(x)^2
= 1/8, a polynomial maximised exactly at x = 0 (SymPy, tests/test_cdf_degree.py), so
3 g_2^2 <= 3/8 = ``WEIGHTED_TAIL_SUP_SQUARED``; for every larger candidate (K + 1) g_K^2 is
at most 0.346 < 3/8, certified on Chebyshev points by the Ehlich-Zeller bound
(``weighted_tail_certificate``, tested). Hence |u(K) - u'(K)| <= 2 sqrt(3/8)/N
= sqrt(3/2)/N for every candidate.

Float error (``score_error``): the mechanism runs on computed scores u~(K), from the computed
direct sums (within B = streaming.direct_error_bound(Kmax, N) of the exact ones in l2) over
N, so the coefficients are within e = (B/N)(1 + u) + 2u of the exact ones (u = 2^-53,
||c|| <= sqrt(2) by Bessel); u moves by at most sqrt(K + 1) e, and evaluating it (a sum of
at most Kmax squares, a product, a sum, a square root) errs by gamma_(Kmax + 5) |u|, with
|u| <= sqrt(3 (K + 1) + E_K). With eta the largest of these bounds, a computed score
moves by at most sqrt(3/2)/N + 2 eta between neighbours: that sum, rounded up, is the
sensitivity the exponential mechanism uses (``computed_score_sensitivity``), so the choice
is epsilon_s-DP as computed, with no slack (at N = 10^7: +0.24% noise).
"""
from fractions import Fraction

import numpy

from ..runtime.rounding import ceil_float, ceil_sqrt, floor_float
from ..runtime import compare
from .gaussian import EPSILON_RANGE, analytic_gaussian_sigma
from .streaming import UNIT, direct_error_bound, gamma
from .tables import COEFFICIENT_SENSITIVITY_SQUARED

TAIL_SUP_SQUARED_2 = Fraction(1, 8)   # g_2^2 = max_x ||P_(2, oo) v(x)||^2, at x = 0 (exact)
WEIGHTED_TAIL_SUP_SQUARED = 3 * TAIL_SUP_SQUARED_2   # max_K (K + 1) g_K^2, attained at K = 2
CANDIDATES = (2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)
SELECTION_SHARE = Fraction(1, 5)
NOISE_WEIGHT = 8.0   # lambda = (b/a)^2: noise against truncation in the Kolmogorov proxy


def score_sensitivity(count):
    """sqrt(3/2)/N, rounded up: 2 sqrt(max_K (K + 1) g_K^2)/N (module docstring)."""
    return ceil_sqrt(4 * WEIGHTED_TAIL_SUP_SQUARED / Fraction(count) ** 2)


def score_error(count, candidates, noise_energy):
    """eta: a bound on |u~(K) - u(K)| for every candidate K, u~ the score tail_scores
    computes from the computed coefficients and u the exact score of the exact ones
    (module docstring, "Float error"); public values only, rounded up."""
    top = max(candidates)
    drift = Fraction(direct_error_bound(top, count)) / count * (1 + UNIT) + 2 * UNIT
    evaluation = gamma(top + 5)
    return max(ceil_sqrt((k + 1) * drift ** 2)
               + evaluation * Fraction(ceil_sqrt(3 * (k + 1) + Fraction(energy)))
               for k, energy in zip(candidates, noise_energy))


def computed_score_sensitivity(count, candidates, noise_energy):
    """sqrt(3/2)/N + 2 eta, rounded up: how far a computed score moves between neighbouring
    data sets (score_sensitivity for the exact scores, score_error for the float error)."""
    return ceil_float(Fraction(score_sensitivity(count))
                      + 2 * Fraction(score_error(count, candidates, noise_energy)))


def weighted_tail_certificate(candidates=CANDIDATES, oversampling=16):
    """Upper bounds on (K + 1) g_K^2 = (K + 1) max_x ||P_(K, Kmax] v(x)||^2 for each
    candidate K: the maximum of the polynomial ||P_K v(x)||^2 (degree n = 2 Kmax + 2) over
    the m + 1 Chebyshev points cos(j pi/m), m = oversampling n, times sec(n pi/(2m)) (Ehlich
    and Zeller 1964: a bound on the whole of [-1, 1]) and 1 + 1e-9 (float rounding of a
    sum of squares, relative error below 1e-12)."""
    from .release import record_contributions
    top = max(candidates)
    n = 2 * top + 2
    m = oversampling * n
    x = numpy.cos(numpy.arange(m + 1) * numpy.pi / m)
    squares = record_contributions(x, top, "direct") ** 2
    tails = numpy.cumsum(squares[:, ::-1], axis=1)[:, ::-1]
    inflate = (1 + 1e-9) / numpy.cos(n * numpy.pi / (2 * m))
    return [(k + 1) * float(tails[:, k + 1].max()) * inflate if k < top else 0.0
            for k in candidates]


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
    public release budget (noise_energy)."""
    return tail_scores(coefficients, candidates,
                       noise_energy(count, release_epsilon, delta, candidates))


def noise_energy(count, release_epsilon, delta, candidates):
    """E_K = (K + 1) lambda sigma^2 per candidate: the release's noise term (public)."""
    sigma = analytic_gaussian_sigma(release_epsilon, delta,
                                    ceil_sqrt(COEFFICIENT_SENSITIVITY_SQUARED)) / count
    return [(k + 1.0) * NOISE_WEIGHT * sigma ** 2 for k in candidates]


def tail_scores(coefficients, candidates, noise_energy):
    """-sqrt((K + 1) ||c_(K, Kmax]||^2 + E_K): the tail energy a sum of squares (never a
    difference), E_K public."""
    squares = numpy.asarray(coefficients, dtype=float) ** 2
    tails = numpy.array([(k + 1.0) * squares[k + 1:].sum() for k in candidates])
    return -numpy.sqrt(tails + numpy.asarray(noise_energy, dtype=float))


def exponential_mechanism(values, sensitivity, epsilon, rng):
    """Index i with probability proportional to exp(epsilon u_i / (2 sensitivity))
    (McSherry and Talwar 2007), epsilon-DP when each u_i has that sensitivity: the argmax of
    u_i + G_i with G_i Gumbel of scale 2 sensitivity / epsilon (rounded up), every
    comparison decided exactly (runtime/compare.py; ties have probability 0)."""
    scale = gumbel_scale(sensitivity, epsilon)
    best, index = None, 0
    for i, value in enumerate(values):
        noisy = float(value) + compare.Noise("gumbel", scale, rng)
        if best is None or noisy >= best:
            best, index = noisy, i
    return index


def gumbel_scale(sensitivity, epsilon):
    """2 sensitivity / epsilon, rounded up: the exponential mechanism's Gumbel scale."""
    return ceil_float(2 * Fraction(sensitivity) / Fraction(epsilon))


def selection_noise(count, epsilon, delta, candidates=CANDIDATES):
    """The public facts of the choice's noise for N = ``count`` and a total (epsilon,
    delta): the computed scores' sensitivity and the Gumbel scale (as choose_degree)."""
    selection, _, _, sensitivity = _choice(count, epsilon, delta, candidates)
    return {"score_sensitivity": sensitivity, "gumbel_scale": gumbel_scale(sensitivity, selection)}


def _choice(count, epsilon, delta, candidates):
    """(epsilon_s, epsilon_r, the noise energies E_K, the computed scores' sensitivity)."""
    selection, release = split_budget(epsilon)
    energy = noise_energy(count, release, delta, candidates)
    return selection, release, energy, computed_score_sensitivity(count, candidates, energy)


def choose_degree(coefficients, count, epsilon, delta, rng, candidates=CANDIDATES):
    """(K, epsilon_s, epsilon_r): the exponential mechanism's choice with epsilon_s among
    ``candidates`` (public, each >= 2, at most len(coefficients) - 1)."""
    if min(candidates) < 2 or max(candidates) >= len(coefficients):
        raise ValueError(f"degree candidates must lie in 2..{len(coefficients) - 1}")
    selection, release, energy, sensitivity = _choice(count, epsilon, delta, candidates)
    index = exponential_mechanism(tail_scores(coefficients, candidates, energy), sensitivity,
                                  selection, rng)
    return candidates[index], selection, release
