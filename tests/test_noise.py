"""Exact-distribution tests of the generated samplers (false alarm < 1e-6 each)."""
import math

import numpy
import pytest
from scipy import stats

from conftest import generated

ALPHA = 1e-6


@pytest.mark.parametrize("name", ["linear", "ellipse", "fourier8"])
def test_gp_whitened_radius_is_gamma_d(name):
    module = generated(name)
    d, epsilon = module.COEF_DIM, 0.7
    c = numpy.zeros((20000,) + module.COEF_SHAPE)
    z = module.privatize(c, epsilon=epsilon, rng=numpy.random.default_rng(11)).reshape(20000, d)
    radius = numpy.linalg.norm(z, axis=1) * epsilon
    assert stats.kstest(radius, "gamma", args=(d,)).pvalue > ALPHA
    assert stats.kstest(radius, "gamma", args=(d + 0.3,)).pvalue < ALPHA  # the test has power


@pytest.mark.parametrize("name", ["linear", "ellipse", "fourier8"])
def test_gp_direction_is_uniform_on_the_sphere(name):
    module = generated(name)
    d = module.COEF_DIM
    z = module.privatize(numpy.zeros((20000,) + module.COEF_SHAPE), epsilon=1.0,
                         rng=numpy.random.default_rng(12)).reshape(20000, d)
    direction = z / numpy.linalg.norm(z, axis=1, keepdims=True)
    for axis in numpy.random.default_rng(13).normal(size=(3, d)):
        axis /= numpy.linalg.norm(axis)
        projection = (direction @ axis + 1) / 2
        shape = (d - 1) / 2
        assert stats.kstest(projection, "beta", args=(shape, shape)).pvalue > ALPHA / 3


@pytest.mark.parametrize("name", ["trajectory_linear", "fourier8"])
def test_cgp_noise_is_gaussian_with_covariance_identity_over_2rho(name):
    module = generated(name)
    d, rho, n = module.COEF_DIM, 0.3, 40000
    z = module.privatize(numpy.zeros((n,) + module.COEF_SHAPE), rho=rho,
                         rng=numpy.random.default_rng(14)).reshape(n, d)
    variance = 1 / (2 * rho)
    covariance = z.T @ z / n
    sd = numpy.where(numpy.eye(d) == 1, variance * math.sqrt(2 / n), variance / math.sqrt(n))
    assert numpy.all(numpy.abs(covariance - variance * numpy.eye(d)) < 6.5 * sd)
    assert stats.kstest((z ** 2).sum(axis=1) / variance, "chi2", args=(d,)).pvalue > ALPHA


def _squared_l2_errors(module, noisy, clean):
    lo, hi = module._domain(module.PARAMETERS)
    nodes, weights = numpy.polynomial.legendre.leggauss(60)
    t = (hi - lo) / 2 * nodes + (hi + lo) / 2
    difference = module.evaluate(noisy, t) - module.evaluate(clean, t)
    squares = difference ** 2 if difference.ndim == 2 else (difference ** 2).sum(axis=-1)
    return squares @ (weights * (hi - lo) / 2)


def _squared_error_moments(d, model):
    """Mean and standard deviation of ||Z||^2 (GP: Gamma(d) radius / eps; CGP: chi2_d/(2 rho))."""
    if "epsilon" in model:
        e = model["epsilon"]
        return d * (d + 1) / e ** 2, math.sqrt(d * (d + 1) * (d + 2) * (d + 3) - (d * (d + 1)) ** 2) / e ** 2
    return d / (2 * model["rho"]), math.sqrt(2 * d) / (2 * model["rho"])


@pytest.mark.parametrize("name", ["linear", "ellipse", "circle_shift", "two_circles"])
@pytest.mark.parametrize("model", [{"epsilon": 2.0}, {"rho": 0.5}])
def test_expected_squared_function_error(name, model):
    """E||f~ - f||^2 measured through evaluate and quadrature: d(d+1)/eps^2 or d/(2 rho)."""
    module = generated(name)
    d, n = module.COEF_DIM, 20000
    clean = numpy.random.default_rng(1).normal(size=module.COEF_SHAPE)
    noisy = module.privatize(numpy.broadcast_to(clean, (n,) + clean.shape),
                             rng=numpy.random.default_rng(15), **model)
    errors = _squared_l2_errors(module, noisy, clean)
    mean, sd = _squared_error_moments(d, model)
    assert abs(errors.mean() - mean) < 5.5 * sd / math.sqrt(n)
    assert abs(numpy.sqrt(errors).mean() - module.expected_error(**model)) < 0.05 * math.sqrt(mean)


@pytest.mark.parametrize("model", [{"epsilon": 1.3}, {"rho": 0.4}])
def test_error_bound_holds_with_probability_one_minus_beta(model):
    module = generated("fourier8")
    n, beta = 20000, 0.05
    z = module.privatize(numpy.zeros((n, module.COEF_DIM)), rng=numpy.random.default_rng(17), **model)
    exceed = numpy.mean(numpy.linalg.norm(z, axis=1) > module.error_bound(beta, **model))
    assert exceed <= beta + 5 * math.sqrt(beta * (1 - beta) / n)


def test_batch_draws_independent_noise_and_seeds_reproduce():
    module = generated("linear")
    c = numpy.zeros((2, 2))
    first = module.privatize(c, epsilon=1.0, rng=numpy.random.default_rng(3))
    again = module.privatize(c, epsilon=1.0, rng=numpy.random.default_rng(3))
    assert numpy.array_equal(first, again)
    assert not numpy.allclose(first[0], first[1])
    assert not numpy.array_equal(module.privatize(c, epsilon=1.0), module.privatize(c, epsilon=1.0))


SECURE_CASES = [("random", (), "uniform", ()), ("standard_normal", (), "norm", ()),
                ("laplace", (0.0, 2.5), "laplace", (0.0, 2.5)), ("gamma", (1.0,), "gamma", (1.0,)),
                ("gamma", (2.0,), "gamma", (2.0,)), ("gamma", (17.0,), "gamma", (17.0,)),
                ("gamma", (800.0,), "gamma", (800.0,))]


@pytest.mark.parametrize("method, arguments, distribution, parameters", SECURE_CASES)
def test_secure_generator_variates_pass_ks_at_one_in_a_million(method, arguments, distribution, parameters):
    from gpcompiler.secure import SecureGenerator
    sample = getattr(SecureGenerator(), method)(*arguments, size=50000)
    assert stats.kstest(sample, distribution, args=parameters).pvalue > ALPHA


def test_secure_uniform_bits_pass_chi_square():
    from gpcompiler.secure import SecureGenerator
    u = SecureGenerator().random(200000)
    assert u.min() > 0 and u.max() <= 1
    counts = numpy.bincount(numpy.minimum((u * 256).astype(int), 255), minlength=256)
    assert stats.chisquare(counts).pvalue > ALPHA


@pytest.mark.parametrize("name", ["linear", "fourier8"])
def test_default_secure_path_of_generated_modules_has_the_right_distribution(name):
    module = generated(name)
    d = module.COEF_DIM
    z = module.privatize(numpy.zeros((20000, d)), epsilon=1.0)
    radius = numpy.linalg.norm(z, axis=1)
    assert stats.kstest(radius, "gamma", args=(d,)).pvalue > ALPHA
    axis = numpy.ones(d) / math.sqrt(d)
    shape = (d - 1) / 2
    assert stats.kstest((z @ axis / radius + 1) / 2, "beta", args=(shape, shape)).pvalue > ALPHA
    gaussian = module.privatize(numpy.zeros((20000, d)), rho=2.0)
    assert stats.kstest(gaussian.ravel() * 2.0, "norm").pvalue > ALPHA


def test_secure_uniforms_are_exactly_the_geometric_exponent_construction():
    """SecureGenerator builds u's bits directly; each u equals (2^52 + m) 2^-(52 + e) exactly,
    e = 1 + the leading zero bits of the word's top 12 bits, continued into fresh words while
    they are 0 (scripted here), computed independently with Python integers."""
    from fractions import Fraction

    from gpcompiler.secure import SecureGenerator
    fresh = [0, 1, 2 ** 63, 12345, 2 ** 64 - 1, 7]

    class Scripted(SecureGenerator):
        def _words(self, count):
            taken = [fresh.pop(0) for _ in range(count)]
            return numpy.array(taken, dtype=numpy.uint64)

    random = numpy.random.default_rng(9).integers(2 ** 52, 2 ** 64, 2000, dtype=numpy.uint64,
                                                  endpoint=False).tolist()
    words = [2 ** 64 - 1, 2 ** 63, 2 ** 52, 2 ** 53 - 1, 7 << 52 | 99, 3, 0, 2 ** 52 - 1, 5]
    words += random
    values = Scripted()._uniforms(numpy.array(words, dtype=numpy.uint64)).tolist()
    # words 3, 0, 2^52 - 1, 5 (top bits 0) take 0 then 2^64 - 1, 1, 2^63, 12345
    continuation = iter([64 + 1, 64, 1, 51])
    for word, value in zip(words, values):
        top, m = word >> 52, word & (2 ** 52 - 1)
        e = 13 - top.bit_length() if top else 12 + next(continuation)
        assert Fraction(value) == Fraction(2 ** 52 + m, 2 ** (52 + e)), word
    assert fresh == [7]
    fresh[:] = [0] * 15 + [100]      # e = 12 + 15 * 64 + 58 = 1030: u is subnormal, rounded
    deep = Scripted()._uniforms(numpy.array([5], dtype=numpy.uint64))[0]
    assert deep == float(Fraction(2 ** 52 + 5, 2 ** (52 + 1030))) and 0 < deep < 2.0 ** -1022


def test_secure_box_muller_pairs_match_mpmath():
    """Box-Muller takes cos and sin of 2 pi u2 from one tangent t = tan(pi u2): for scripted
    uniforms both outputs equal sqrt(-2 ln u1) (cos, sin)(2 pi u2) computed by mpmath to
    1e-15 relative to the radius (a float64 tolerance), also at the pole of the tangent."""
    import mpmath

    from gpcompiler.secure import SecureGenerator
    rng = numpy.random.default_rng(21)
    u2 = numpy.r_[rng.random(1500), 0.5 + rng.normal(0, 1e-7, 200), [0.5, 0.25, 0.75],
                  [2.0 ** -40, 1 - 2.0 ** -53], rng.random(100) * 1e-9]
    u1 = rng.random(u2.size)

    class Scripted(SecureGenerator):
        def random(self, size=None):
            return numpy.r_[u1, u2]

    z = Scripted().standard_normal(2 * u2.size)
    for a, b, x, y in zip(u1.tolist(), u2.tolist(), z[:u2.size].tolist(), z[u2.size:].tolist()):
        radius = mpmath.sqrt(-2 * mpmath.log(a))
        angle = 2 * mpmath.pi * mpmath.mpf(b)
        assert abs(x - radius * mpmath.cos(angle)) <= 1e-15 * radius, (a, b)
        assert abs(y - radius * mpmath.sin(angle)) <= 1e-15 * radius, (a, b)
