"""Every stated float-error bound against an independent derivation (issue 30, item 8).

Two kinds of reference, neither calling the bound under test:
- golden values: each bound's formula, as its docs state it (docs/clipping.md, the
  docstrings of compiler/slack.py, cdf/streaming.py, cdf/joint.py, cdf/degree.py), derived
  again here in exact Fractions (gamma_n = n u / (1 - n u), Higham Lemma 3.1, written out
  here; square roots at 50 digits). The shipped value must lie between the golden value and
  the golden value times 1 + TOLERANCE: the code rounds its constants and result up to floats
  (relative 2^-52 each) and takes sqrt(2(2k + 1)) from below to six decimals (relative
  < 1e-6, the direct CDF bounds' SQRT_TOLERANCE). Halving or dropping any term moves a value
  by far more (the smallest term checked moves it by 1e-4).
- realized worst cases: the balls of a product and of -ln U, ln(-ln U) (runtime/exact.py,
  runtime/compare.py) against exact values on inputs built to reach most of each term.
"""
import math
from fractions import Fraction

import mpmath
import numpy
import pytest

from conftest import generated
from gpcompiler.cdf import degree, joint, streaming
from gpcompiler.compiler import slack
from gpcompiler.runtime import compare, exact

U = Fraction(1, 2 ** 53)
DELTA_W = Fraction(1, 10 ** 13)   # docs/clipping.md: each weight's relative error
TOLERANCE = Fraction(1, 2 ** 45)
SQRT_TOLERANCE = Fraction(1, 10 ** 6)
ROW, CHUNK, TOP = 1 << 10, 1 << 16, 1001   # streaming: records per row, per chunk; K_max + 1


@pytest.fixture(autouse=True)
def _fifty_digits():
    with mpmath.workdps(50):
        yield


def gamma(n):
    """n u / (1 - n u) (Higham, Lemma 3.1)."""
    return n * U / (1 - n * U)


def sqrt(value):
    return mpmath.sqrt(_mp(value))


def _mp(value):
    value = Fraction(value)
    return mpmath.mpf(value.numerator) / value.denominator


def _rounded_up(shipped, golden, tolerance=TOLERANCE, label="", below=0):
    """golden (1 - below) <= shipped <= golden (1 + tolerance)."""
    golden, shipped = _mp(golden) if isinstance(golden, Fraction) else golden, _mp(shipped)
    assert golden * (1 - _mp(below)) <= shipped <= golden * (1 + _mp(tolerance)), \
        (label, float(shipped / golden - 1), float(tolerance))


# slack.curve_eta and box_eta multiply the float ceil_sqrt(3^k m) by a Fraction, which
# Python rounds to the nearest float: ETA can come out one ulp below its exact value
# (test_eta_is_never_below_its_exact_value). The golden tests allow that ulp.
ETA_BELOW = Fraction(1, 2 ** 52)


# --- compiler/slack.py: ETA of 1-D and box modules (docs/clipping.md) -----------------

def _contraction(terms, blocks):
    """Blocks of ``terms`` products in any order (gamma_K), block sums by a binary counter
    (depth 2 ceil(log2 blocks) + 1: gamma_D), weights within delta_w."""
    depth = 2 * math.ceil(math.log2(blocks)) + 1
    return (1 + DELTA_W) * (gamma(terms) + (1 + gamma(terms)) * gamma(depth)) + DELTA_W


def _curve_eta(m, n, vector_basis, coefficients):
    """sqrt(3 m) times the contraction's error (blocks of 1024 samples, n of them per block
    for a vector basis, 2^30 blocks), plus the clips' gamma_max(64, d) + 3u, times 1 + it."""
    per_unit = _contraction(1024 * (n if vector_basis else 1), 2 ** 30)
    clip = _mp(gamma(max(64, coefficients)) + 3 * U)
    return (sqrt(3 * m) * _mp(per_unit) + clip) * (1 + clip)


def _box_eta(atoms, k, transform, coefficients):
    """sqrt(3^k A) ||K|| (k gamma_(2^16) + delta_w + gamma_A), plus the clips'
    gamma_max(64 + 4k, d) + 3u, times 1 + it."""
    per_atom = Fraction(transform) * (k * gamma(2 ** 16) + DELTA_W + gamma(atoms))
    clip = _mp(gamma(max(64 + 4 * k, coefficients)) + 3 * U)
    return (sqrt(3 ** k * atoms) * _mp(per_atom) + clip) * (1 + clip)


@pytest.mark.parametrize("terms, blocks", [(1024, 2 ** 30), (2048, 2 ** 30), (1024, 1),
                                            (1024, 2), (5000, 3), (1, 2 ** 20 + 1)])
def test_contraction_error_equals_its_golden_value(terms, blocks):
    """(1 + delta_w)(gamma_K + (1 + gamma_K) gamma_D) + delta_w, exactly (a Fraction)."""
    assert slack.contraction_error(terms, blocks) == _contraction(terms, blocks)


@pytest.mark.parametrize("m, n, vector_basis, coefficients", [
    (2, 1, False, 2), (11, 1, False, 11), (3, 2, True, 3), (3, 2, False, 6),
    (800, 1, False, 800), (40, 4, True, 40), (33, 3, False, 99)])
def test_curve_eta_equals_its_golden_value(m, n, vector_basis, coefficients):
    """slack.curve_eta against the golden ETA of docs/clipping.md: a halved or dropped
    delta_w, gamma_K, gamma_61, sqrt(3), the vector basis's n, the clip's 3u or its 64
    moves it by 1e-4 relative at least."""
    _rounded_up(slack.curve_eta(m, n, vector_basis, coefficients),
                _curve_eta(m, n, vector_basis, coefficients), below=ETA_BELOW)


@pytest.mark.parametrize("atoms, k, transform, coefficients", [
    (35, 2, 1.0, 35), (169, 2, 1.0, 169), (25, 2, 3.25, 15), (8, 3, 1.0, 8),
    (64, 3, 1.5, 200), (9, 1, 2.0, 9)])
def test_box_eta_equals_its_golden_value(atoms, k, transform, coefficients):
    """slack.box_eta against the golden ETA (docs/clipping.md, "Boxes"): every term matters,
    the k axes' gamma_(2^16), delta_w, gamma_A, ||K||, 3^(k/2), the clip's 64 + 4k and 3u."""
    _rounded_up(slack.box_eta(atoms, k, transform, coefficients),
                _box_eta(atoms, k, transform, coefficients), below=ETA_BELOW)


@pytest.mark.parametrize("name", ["linear", "legendre10", "fourier8", "monomial32", "sinc_ecg",
                                  "ellipse", "circle_shift", "two_circles", "trajectory_linear",
                                  "harbour", "legendre_box"])
def test_generated_modules_state_the_golden_eta(name):
    """The ETA a module states (its release facts, explain) is the golden one of its public
    shape: 1-D from (m, n, vector basis, d), boxes of Legendre atoms (||K|| = 1) from
    (A, k, d)."""
    module = generated(name)
    if getattr(module, "DIMENSION", 1) == 1:
        golden = _curve_eta(module.BASIS_SIZE, module.VALUE_DIM, module.VECTOR_BASIS,
                            module.COEF_DIM)
    else:
        golden = _box_eta(module.BASIS_SIZE, module.DIMENSION, 1, module.COEF_DIM)
    _rounded_up(module.ETA, golden, below=ETA_BELOW)


def test_eta_is_never_below_its_exact_value():
    """ETA is the stated bound rounded up (docs/clipping.md: 'rounded up by exact
    arithmetic'): for the ellipse's shape (m = 3, n = 2, d = 6) it is one ulp below."""
    _rounded_up(slack.curve_eta(3, 2, False, 6), _curve_eta(3, 2, False, 6))
    _rounded_up(generated("ellipse").ETA, _curve_eta(3, 2, False, 6))


# --- cdf/streaming.py, cdf/joint.py, cdf/degree.py: sums and tensors of records ---------

def _sum_error():
    """Two levels of float sums, any order within each: rows of ROW, then CHUNK / ROW."""
    return gamma(ROW - 1) + gamma(CHUNK // ROW) * (1 + gamma(ROW - 1))


def _power_error(i):
    """x^i by i - 1 rounded products, plus i 2^-1074 of underflow."""
    return gamma(i - 1) + Fraction(i, 2 ** 1074)


def _moment_bound(degree_, count):
    """N sqrt(sum_i ((e_i (1 + s) + s)(1 + u) + u)^2), i = 1..K + 1."""
    s = _sum_error()
    squares = sum((((_power_error(i) * (1 + s) + s) * (1 + U) + U) ** 2
                   for i in range(1, degree_ + 2)), Fraction(0))
    return count * sqrt(squares)


def _rho():
    """A recurrence step's error rho = u (5 + 2u)(1 + E) + 2^-1073 with E = rho T at the
    largest degree (T = TOP (TOP - 1)/2): the fixed point, solved exactly."""
    c, tiny = U * (5 + 2 * U), Fraction(1, 2 ** 1073)
    return (c + tiny) / (1 - c * TOP * (TOP - 1) / 2)


def _kappa():
    """A quotient by a rounded square root: (1 + u)^2 / (1 - u) - 1."""
    return (1 + U) ** 2 / (1 - U) - 1


def _recurrence(j):
    """E_j = rho (j - 1) j / 2: the Chebyshev recurrence's error at degree j."""
    return _rho() * (j - 1) * j / 2


def _legendre_sum_error(j):
    """b_j of the direct sums (per record): a_j = E_j + s (1 + E_j), r_j = a_j + u (1 + a_j),
    b_j = r_j + (gamma_4 + u (1 + gamma_4))(1 + r_j); b_0 = 0 (S_0 = N exact)."""
    if j < 1:
        return Fraction(0)
    a = _recurrence(j) + _sum_error() * (1 + _recurrence(j))
    r = a + U * (1 + a)
    return r + (gamma(4) + U * (1 + gamma(4))) * (1 + r)


def _direct_bound(degree_, count):
    """N sqrt(sum_k ((b_(k+1) + b_(k-1)) / sqrt(2(2k + 1)) (1 + kappa) + 2 kappa)^2)."""
    kappa = _mp(_kappa())
    squares = sum(((_mp(_legendre_sum_error(k + 1) + _legendre_sum_error(k - 1))
                    / sqrt(2 * (2 * k + 1)) * (1 + kappa) + 2 * kappa) ** 2
                   for k in range(degree_ + 1)), mpmath.mpf(0))
    return count * mpmath.sqrt(squares)


def _factor_errors(degree_):
    """(b, v) per k of the per-record factors int_x^1 e_k: r_j = E_j (1 + gamma_3) + gamma_3
    + gamma_(j+1)(1 + gamma_3)(1 + E_j) (r_0 = 0), b_k = (s + u (2 + s)) / sqrt(2(2k + 1))
    (1 + kappa) + 2 kappa / sqrt(2(2k + 1)) with s = r_(k+1) + r_(k-1); v_k = 2 / sqrt(...)."""
    def r(j):
        if j < 1:
            return Fraction(0)
        e = _recurrence(j)
        return e * (1 + gamma(3)) + gamma(3) + gamma(j + 1) * (1 + gamma(3)) * (1 + e)
    kappa = _mp(_kappa())
    bounds, sizes = [], []
    for k in range(degree_ + 1):
        spread, root = r(k + 1) + r(k - 1), sqrt(2 * (2 * k + 1))
        bounds.append(_mp(spread + U * (2 + spread)) / root * (1 + kappa) + 2 * kappa / root)
        sizes.append(2 / root)
    return bounds, sizes


@pytest.mark.parametrize("degree_", [0, 1, 4, 10, 40])
@pytest.mark.parametrize("count", [1, 1000, 10 ** 7, 2 ** 40])
def test_moment_error_bound_equals_its_golden_value(degree_, count):
    """streaming.moment_error_bound: the powers' gamma_(i-1), the two-level sum's
    gamma_1023 and gamma_64, the total's rounding u: each moves it by 1e-3 at least."""
    _rounded_up(streaming.moment_error_bound(degree_, count), _moment_bound(degree_, count))


@pytest.mark.parametrize("degree_", [0, 1, 2, 10, 100, 1000])
@pytest.mark.parametrize("count", [1, 12345, 2 ** 40])
def test_direct_error_bound_equals_its_golden_value(degree_, count):
    """streaming.direct_error_bound: rho's recurrence, the sums, the Legendre weights'
    gamma_4 + u, the quotient's kappa (alone 1% of the bound at small degrees)."""
    _rounded_up(streaming.direct_error_bound(degree_, count), _direct_bound(degree_, count),
                SQRT_TOLERANCE, (degree_, count))


@pytest.mark.parametrize("degree_", [0, 3, 16, 256])
def test_factor_errors_equal_their_golden_values(degree_):
    """streaming.factor_errors, every k: b_k (the recurrence, the weights' gamma_3, the
    sums' gamma_(j+1), the difference's u (2 + s), kappa) and v_k."""
    bounds, sizes = streaming.factor_errors(degree_)
    golden_bounds, golden_sizes = _factor_errors(degree_)
    assert len(bounds) == len(sizes) == degree_ + 1
    for k in range(degree_ + 1):
        _rounded_up(bounds[k], golden_bounds[k], SQRT_TOLERANCE, ("b", k))
        _rounded_up(sizes[k], golden_sizes[k], SQRT_TOLERANCE, ("v", k))


@pytest.mark.parametrize("degree_", [0, 1, 10, 64])
def test_mean_errors_equal_their_golden_values(degree_):
    """streaming.mean_errors: per coordinate b + u (v + b)(2 + u) (direct) and
    e_i + u (1 + e_i)(2 + u) (moments): fsum's rounding and the division's, each a u."""
    coefficients, moments = streaming.mean_errors(degree_)
    bounds, sizes = _factor_errors(degree_)
    u = _mp(U)
    direct = mpmath.sqrt(mpmath.fsum((b + u * (v + b) * (2 + u)) ** 2
                                     for b, v in zip(bounds, sizes)))
    powers = [_mp(_power_error(i)) for i in range(1, degree_ + 2)]
    golden = mpmath.sqrt(mpmath.fsum((e + u * (1 + e) * (2 + u)) ** 2 for e in powers))
    _rounded_up(coefficients, direct, SQRT_TOLERANCE, "coefficients")
    _rounded_up(moments, golden, TOLERANCE, "moments")


def _tensor_bound(degrees, count):
    """N per_unit sqrt(prod_i sum_(k <= d_i) v_k^2): per_unit = grown - 1 + (gamma_c +
    gamma_D (1 + gamma_c)) grown, grown = (1 + beta)^k (1 + gamma_(k-1)), beta = max b/v,
    gamma_c = gamma_min(CHUNK, N), D = 2 ceil(log2 chunks) + 1."""
    bounds, sizes = _factor_errors(max(degrees))
    beta = max(b / v for b, v in zip(bounds, sizes))
    k = len(degrees)
    grown = (1 + beta) ** k * (1 + _mp(gamma(k - 1)))
    chunks = -(-count // CHUNK)
    depth = 2 * math.ceil(math.log2(chunks)) + 1
    chunk, tree = _mp(gamma(min(CHUNK, count))), _mp(gamma(depth))
    per_unit = grown - 1 + (chunk + tree * (1 + chunk)) * grown
    energy = math.prod(mpmath.fsum(v * v for v in sizes[:d + 1]) for d in degrees)
    return count * per_unit * mpmath.sqrt(energy)


@pytest.mark.parametrize("degrees", [(3,), (4, 4), (2, 5, 3), (8, 8, 8, 8)])
@pytest.mark.parametrize("count", [1, 65536, 65537, 10 ** 9])
def test_tensor_error_bound_equals_its_golden_value(degrees, count):
    """joint.tensor_error_bound: the factors' beta to the power k, the products' gamma_(k-1),
    the chunk's gamma_min(CHUNK, N), the pairwise tree's gamma_D, the energy."""
    _rounded_up(joint.tensor_error_bound(degrees, count), _tensor_bound(degrees, count),
                len(degrees) * SQRT_TOLERANCE, (degrees, count))


@pytest.mark.parametrize("count", [50, 10 ** 4, 10 ** 7])
@pytest.mark.parametrize("candidates", [(2, 4, 8), degree.CANDIDATES])
def test_score_error_equals_its_golden_value(count, candidates):
    """degree.score_error: max over K of sqrt(K + 1) ((B/N)(1 + u) + 2u), B the direct
    sums' bound at the largest candidate, plus gamma_(Kmax + 5) sqrt(3 (K + 1) + E_K)."""
    energy = [1e-3 * (k + 1) / count for k in candidates]
    top = max(candidates)
    drift = _direct_bound(top, count) / count * (1 + _mp(U)) + 2 * _mp(U)
    golden = max(mpmath.sqrt(k + 1) * drift
                 + _mp(gamma(top + 5)) * mpmath.sqrt(3 * (k + 1) + _mp(e))
                 for k, e in zip(candidates, energy))
    _rounded_up(degree.score_error(count, candidates, energy), golden, SQRT_TOLERANCE)


# --- runtime balls: realized worst cases ----------------------------------------------

def _product_with_large_rounding(rng):
    """Floats a, b whose product's rounding error is at least 0.98 u |fl(ab)| (products
    just above a power of two, where half an ulp is u of the value)."""
    while True:
        a = float(rng.uniform(1, 2))
        b = math.nextafter(2.0 / a, 3.0)
        error = abs(Fraction(a) * Fraction(b) - Fraction(a * b))
        if error >= Fraction(98, 100) * U * Fraction(a * b):
            return a, b


def test_product_ball_is_attained_term_by_term():
    """exact._times, the ball of a product, against exact corners: with radii, the corner
    (a + ra)(b + rb) lies at |a| rb + |b| ra + ra rb from ab, so a ball short of any of the
    three terms (by a half: 1/6 of the total here) misses it; without radii, a product whose
    rounding errs by 0.98 u |ab| needs the rounding term (halved, it misses it)."""
    a, b = (1.0, 0.5), (3.0, 0.25)
    mid, rad = exact._times(a, b)
    for sa in (-1, 1):
        for sb in (-1, 1):
            corner = ((Fraction(a[0]) + sa * Fraction(a[1]))
                      * (Fraction(b[0]) + sb * Fraction(b[1])))
            assert abs(corner - Fraction(float(mid))) <= Fraction(float(rad))
    worst = abs((Fraction(a[0]) + Fraction(a[1])) * (Fraction(b[0]) + Fraction(b[1]))
                - Fraction(float(mid)))
    assert worst >= Fraction(float(rad)) * (1 - Fraction(1, 2 ** 30))
    rng = numpy.random.default_rng(3)
    for _ in range(20):
        x, y = _product_with_large_rounding(rng)
        mid, rad = exact._times((x, 0.0), (y, 0.0))
        error = abs(Fraction(x) * Fraction(y) - Fraction(float(mid)))
        assert error <= Fraction(float(rad)) <= error * Fraction(103, 100)


def _word(m, sign=0):
    """A 64-bit word whose top 52 bits are m (the uniform's interval [m, m + 1] 2^-52)."""
    return (m << 12) | sign


@pytest.mark.parametrize("kind", ["laplace", "gumbel"])
def test_exponential_and_gumbel_balls_hold_both_ends_and_are_attained_near_zero(kind):
    """A Laplace (-ln U, the sign its word's lowest bit) or Gumbel (-ln(-ln U)) noise's
    fast-path ball (compare.Noise.ball) holds its value at both ends of U's interval
    [m, m + 1] 2^-52, for m from 1 to 2^52 - 1 (a Gumbel ball of the last interval, where
    -ln U reaches 0, is not finite: undecided); at m = 1 the lower end lies at 0.6 of the
    radius from the midpoint (ln(3/2) against 2/3 for -ln U): a slope bound halved misses
    it."""
    ms = [1, 2, 3, 7, 1000, 2 ** 20 + 1, 2 ** 40 - 1, 2 ** 51, 2 ** 52 - 1]
    reached = []
    for m in ms:
        for sign in (0, 1):
            with numpy.errstate(invalid="ignore"):   # the last Gumbel ball: inf x 0
                mid, rad = compare.Noise(kind, 1.0, None, words=[_word(m, sign)]).ball()
            mid, rad = mpmath.mpf(float(mid[0])), mpmath.mpf(float(rad[0]))
            for end in (m, m + 1):
                e = -mpmath.log(mpmath.mpf(end) * mpmath.mpf(2) ** -52)
                if not mpmath.isfinite(rad):   # claims nothing: comparisons refine it
                    assert kind == "gumbel" and m == 2 ** 52 - 1, m   # -ln U from 0
                    continue
                value = (-e if sign else e) if kind == "laplace" else -mpmath.log(e)
                assert abs(value - mid) <= rad, (m, sign, end)
                reached.append((m, abs(value - mid) / rad))
    assert max(r for m, r in reached if m == 1) >= 0.55
