"""DP CDF estimation: exact tables, analytic Gaussian, sensitivities, estimators, errors."""
import math
from fractions import Fraction

import mpmath
import numpy
import pytest
import sympy
from numpy.polynomial import legendre

from conftest import generated
from gpcompiler import cdf
from gpcompiler.cdf import streaming
from gpcompiler.cdf.release import record_contributions
from gpcompiler.compiler.symbolic import to_float


def _reference_sigma(epsilon, delta):
    """Independent 50-digit solve of Balle & Wang's delta(sigma) = delta (Delta = 1)."""
    with mpmath.workdps(50):
        e, target = mpmath.mpf(epsilon), mpmath.mpf(delta)

        def gap(s):
            return (mpmath.ncdf(1 / (2 * s) - e * s) - mpmath.exp(e) * mpmath.ncdf(-1 / (2 * s) - e * s)
                    - target)
        low, high = mpmath.mpf("1e-4"), mpmath.mpf(1000)
        for _ in range(200):
            middle = (low + high) / 2
            low, high = (middle, high) if gap(middle) > 0 else (low, middle)
        return high


@pytest.mark.parametrize("epsilon", [0.01, 0.1, 1.0, 5.0, 10.0, 20.0, 50.0])
@pytest.mark.parametrize("delta", [1e-12, 1e-5, 0.1, 0.49])
def test_analytic_gaussian_sigma_matches_mpmath_and_is_never_below(epsilon, delta):
    sigma = cdf.analytic_gaussian_sigma(epsilon, delta)
    reference = _reference_sigma(epsilon, delta)
    assert abs(sigma / reference - 1) < 1e-10
    assert mpmath.mpf(sigma) >= reference
    assert cdf.analytic_gaussian_sigma(epsilon, delta, 3.0) >= 3 * reference


def test_known_sigma_values():
    assert cdf.analytic_gaussian_sigma(1, 1e-5) == 3.7306316348159418
    assert cdf.analytic_gaussian_sigma(0.1, 1e-5) == 30.749566131977448
    assert abs(cdf.analytic_gaussian_sigma(10, 1e-5) - 0.49988861970900851) < 1e-16


@pytest.mark.parametrize("degree", [0, 1, 4, 11, 30])
def test_exact_tables_equal_sympy_legendre_expansion(degree):
    tables = cdf.cdf_tables(degree)
    x = sympy.Symbol("x")
    for k in range(degree + 1):
        e = sympy.sqrt(sympy.Rational(2 * k + 1, 2)) * sympy.legendre(k, x)
        tail = sympy.Poly(sympy.expand(sympy.integrate(e, (x, x, 1))), x)   # int_x^1 e_k
        assert sympy.simplify(tail.coeff_monomial(1) - tables.offset[k]) == 0
        for i in range(k + 1):
            assert sympy.simplify(tail.coeff_monomial(x ** (i + 1)) - tables.moment_matrix[k, i]) == 0
            assert tables.moment_matrix[k, i] == -tables.alpha[k] * tables.beta[k][i]


def test_generated_cdf_module_holds_the_exact_tables():
    module = generated("cdf_wages")
    tables = cdf.cdf_tables(module.DEGREE)
    assert numpy.array_equal(module.MOMENT_MATRIX, [[to_float(v) for v in row]
                                                    for row in tables.moment_matrix.tolist()])
    assert numpy.array_equal(module.ALPHA, [to_float(a) for a in tables.alpha])
    wages = numpy.random.default_rng(0).gamma(2.0, 300.0, size=5000)
    assert numpy.allclose(module.coefficients_from_moments(module.moments(wages)),
                          module.coefficients(wages), atol=1e-11)


def test_generated_cdf_module_means_lie_within_their_stated_errors():
    """cdf_wages' coefficients() and moments() (the runtime's per-record terms, fsum, over
    N) against exact means of the mapped records (60 digits; exact rationals): within
    COEFFICIENT_ERROR and MOMENT_ERROR (from streaming.mean_errors), and the sensitivities
    add twice them to the exact means' sqrt(2)/N and sqrt((5K+8)/2)/N. A record that is no
    number takes a public value instead of stopping the release."""
    module = generated("cdf_wages")
    rng = numpy.random.default_rng(3)
    wages = numpy.concatenate([[module.LO, module.HI, module.HI * (1 - 2.0 ** -52), 5e-324],
                               rng.gamma(2.0, 300.0, 60)])
    x = module.to_reference(wages)
    k = module.DEGREE
    with mpmath.workdps(60):
        exact = [mpmath.mpf(0)] * (k + 1)
        for value in map(mpmath.mpf, x.tolist()):
            p = [mpmath.mpf(1), value]
            for n in range(1, k + 1):
                p.append(((2 * n + 1) * value * p[n] - n * p[n - 1]) / (n + 1))
            for j in range(k + 1):
                exact[j] += ((p[j - 1] if j else 1) - p[j + 1]) / mpmath.sqrt(2 * (2 * j + 1))
        error = mpmath.sqrt(sum((mpmath.mpf(float(c)) - e / x.size) ** 2
                                for c, e in zip(module.coefficients(wages), exact)))
    assert 0 < error <= module.COEFFICIENT_ERROR
    assert (module.COEFFICIENT_ERROR, module.MOMENT_ERROR) == streaming.mean_errors(k)
    powers = [sum(Fraction(v) ** i for v in x.tolist()) / x.size for i in range(1, k + 2)]
    moments = module.moments(wages)
    assert math.sqrt(sum(float(Fraction(m) - e) ** 2 for m, e in zip(moments.tolist(), powers))) \
        <= module.MOMENT_ERROR
    assert module.coefficient_sensitivity(x.size) >= math.sqrt(2) / x.size + \
        2 * module.COEFFICIENT_ERROR > math.sqrt(2) / x.size
    assert module.moment_sensitivity(x.size) > math.sqrt((5 * k + 8) / 2) / x.size
    odd = module.coefficients([math.nan, math.inf, -math.inf, 1e308])
    assert numpy.array_equal(odd, module.coefficients([module.LO, module.HI, module.LO,
                                                       module.HI]))


@pytest.mark.parametrize("degree", [3, 10, 20])
def test_coefficient_sensitivity_brute_force(degree):
    grid = numpy.linspace(-1, 1, 401)
    k = numpy.arange(degree + 1)
    antiderivative = legendre.legint(numpy.eye(degree + 1) * numpy.sqrt((2 * k + 1) / 2), lbnd=-1)
    values = numpy.stack([legendre.legval(grid, c) for c in antiderivative.T], axis=1)
    worst = max(numpy.linalg.norm(values - values[i], axis=1).max() for i in range(grid.size))
    bound = math.sqrt(to_float(cdf.cdf_tables(degree).coefficient_sensitivity_squared))
    assert worst <= bound + 1e-12 and abs(worst - bound) < 1e-6
    n = 50
    data = numpy.full(n, 0.3)
    moved = data.copy()
    moved[0], data[0] = 1.0, -1.0
    change = (record_contributions(moved, degree, "direct")
              - record_contributions(data, degree, "direct")).sum(axis=0) / n
    assert abs(numpy.linalg.norm(change) - math.sqrt(2) / n) < 1e-13


@pytest.mark.parametrize("degree", [4, 5, 10])
def test_moment_sensitivity_brute_force_below_paper_bound(degree):
    grid = numpy.linspace(-1, 1, 401)
    powers = grid[:, None] ** numpy.arange(1, degree + 2)
    worst = max(((powers - powers[i]) ** 2).sum(axis=1).max() for i in range(grid.size))
    assert worst <= (5 * degree + 8) / 2


def test_large_degree_evaluation_is_stable():
    """Clenshaw on 121 coefficients agrees with 50-digit mpmath Legendre sums."""
    rng = numpy.random.default_rng(1)
    c = rng.normal(size=121) / (1 + numpy.arange(121))
    x = numpy.linspace(-1, 1, 9)
    got = cdf.legendre_cdf(c, x)
    with mpmath.workdps(50):
        want = [float(mpmath.fsum(mpmath.mpf(ck) * mpmath.sqrt(mpmath.mpf(2 * k + 1) / 2)
                                  * mpmath.legendre(k, mpmath.mpf(xi)) for k, ck in enumerate(c)))
                for xi in x]
    assert numpy.allclose(got, want, atol=1e-12)


def test_streaming_batches_merge_and_spend_only_their_own_budget():
    rng = numpy.random.default_rng(2)
    old, new = rng.normal(500, 100, 3000), rng.normal(600, 100, 2000)
    whole = cdf.Statistics.from_data(numpy.concatenate([old, new]), lo=0, hi=1000, degree=8)
    parts = [cdf.Statistics.from_data(b, lo=0, hi=1000, degree=8) for b in (old, new)]
    assert numpy.allclose(parts[0].merge(parts[1]).sums, whole.sums, atol=1e-9)
    private_old = parts[0].privatize(epsilon=1.0, delta=1e-6, rng=numpy.random.default_rng(3))
    private_new = parts[1].privatize(epsilon=0.5, delta=1e-6, rng=numpy.random.default_rng(4))
    merged = private_old.merge(private_new)
    assert merged.count == 5000 and merged.spent == ((1.0, 1e-6, 3000), (0.5, 1e-6, 2000))
    sigma_old = cdf.analytic_gaussian_sigma(1.0, 1e-6, parts[0].sum_sensitivity())
    sigma_new = cdf.analytic_gaussian_sigma(0.5, 1e-6, parts[1].sum_sensitivity())
    assert math.isclose(merged.noise_variance, sigma_old ** 2 + sigma_new ** 2)
    estimate = merged.estimate()
    truth = numpy.mean(numpy.concatenate([old, new]) <= 550)
    assert abs(estimate.cdf(550) - truth) < 0.05
    with pytest.raises(ValueError, match="cannot be merged"):
        parts[0].merge(cdf.Statistics.from_data(new, lo=0, hi=1000, degree=9))


def test_noise_of_direct_method_has_the_calibrated_scale():
    data = numpy.linspace(0, 1, 1000)
    stats = cdf.Statistics.from_data(data, lo=0, hi=1, degree=6)
    draws = numpy.stack([stats.privatize(epsilon=1.0, delta=1e-5, rng=numpy.random.default_rng(s)).noisy_sums
                         for s in range(2000)]) - stats.sums
    sigma = cdf.analytic_gaussian_sigma(1.0, 1e-5, math.sqrt(2))
    assert abs(draws.std() / sigma - 1) < 6 / math.sqrt(2 * draws.size)


def test_quantile_is_the_generalized_inverse():
    data = numpy.random.default_rng(5).uniform(0, 10, 20000)
    estimate = cdf.estimate(data, lo=0, hi=10, epsilon=2.0, delta=1e-6, degree=6,
                            rng=numpy.random.default_rng(6))
    p = numpy.array([0.1, 0.5, 0.9])
    assert numpy.allclose(estimate.cdf(estimate.quantile(p)), p, atol=1e-3)
    assert numpy.allclose(estimate.quantile(p), 10 * p, atol=0.1)
    assert numpy.all(numpy.diff(estimate.values) >= 0) and estimate.values.min() >= 0
    assert estimate.values.max() <= 1


@pytest.mark.parametrize("kwargs, message", [
    ({"lo": 1.0, "hi": 1.0}, "finite lo < hi"), ({"data": []}, "data is empty"),
    ({"lo": -1e308, "hi": 1e308}, "2 \\(hi - lo\\) finite"),
    ({"epsilon": 0.0}, "epsilon must be positive"),
    ({"delta": 1.0}, "delta must lie in"), ({"method": "magic"}, "method must be one of"),
    ({"epsilon": 100.0}, "epsilon must lie in"), ({"degree": -3}, "degree must be an integer"),
    ({"degree": 300, "method": "moments"}, "0..200 for the moments method"),
])
def test_bad_input_gets_clear_errors(kwargs, message):
    arguments = {"data": [0.1, 0.5], "lo": 0.0, "hi": 1.0, "epsilon": 1.0, "delta": 1e-5, **kwargs}
    with pytest.raises(ValueError, match=message):
        cdf.estimate(arguments.pop("data"), **arguments)


def test_cdf_cli_runs_and_reports_bad_columns(cli, tmp_path):
    status, out, err = cli("cdf", "--lo", "0", "--hi", "2500", "--epsilon", "1", "--delta", "1e-5",
                           "--seed", "1", "--method", "moments", "--plot", tmp_path / "cdf.png")
    assert status == 0, err
    assert "0.50" in out and (tmp_path / "cdf.png").exists()
    status, _, err = cli("cdf", "--column", "salary", "--lo", "0", "--hi", "1", "--epsilon", "1",
                         "--delta", "1e-5")
    assert status == 2 and "no column 'salary'" in err
    status, _, err = cli("cdf", "--lo", "5", "--hi", "1", "--epsilon", "1", "--delta", "1e-5")
    assert status == 2 and "lo < hi" in err              # cli: no traceback either
