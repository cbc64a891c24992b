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
    from gpcompiler.runtime.secure import SecureGenerator
    sample = getattr(SecureGenerator(), method)(*arguments, size=50000)
    assert stats.kstest(sample, distribution, args=parameters).pvalue > ALPHA


def test_secure_uniform_bits_pass_chi_square():
    from gpcompiler.runtime.secure import SecureGenerator
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


def test_secure_entropy_is_openssl_csprng_or_os_urandom_without_it(monkeypatch):
    """Words are the bytes of ssl.RAND_bytes (OpenSSL's CSPRNG), one read per draw, or of
    os.urandom where Python has no ssl module; a forked child draws other words."""
    import os
    import ssl
    import sys

    from gpcompiler.runtime import entropy
    from gpcompiler.runtime.secure import SecureGenerator
    original, reads = ssl.RAND_bytes, []
    monkeypatch.setattr(ssl, "RAND_bytes", lambda n: reads.append(original(n)) or reads[-1])
    generator = SecureGenerator()
    for count in (1, 127, 128, 5000):
        assert generator._words(count).tobytes() == reads[-1] and len(reads[-1]) == 8 * count
    reads.clear()
    monkeypatch.setattr(entropy, "_DRAW", 24)  # a draw beyond it: pieces, in order
    assert generator._words(7).tobytes() == b"".join(reads)
    assert [len(r) for r in reads] == [24, 24, 8]
    monkeypatch.setattr(entropy, "_DRAW", 1 << 30)
    reads.clear()
    generator.standard_normal(3 * generator._BLOCK)
    assert len(reads) >= 3 and {len(r) for r in reads} <= {8, 8 * generator._BLOCK}
    monkeypatch.setitem(sys.modules, "ssl", None)  # import ssl raises ImportError
    fallback = []
    monkeypatch.setattr(os, "urandom", lambda n: fallback.append(n) or b"\x07" * n)
    assert generator._words(3).tolist() == [0x0707070707070707] * 3 and fallback == [24]
    monkeypatch.undo()
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child: its words to the parent, then exit at once
        os.write(write, SecureGenerator()._words(4).tobytes())
        os._exit(0)
    os.waitpid(child, 0)
    assert os.read(read, 32) != SecureGenerator()._words(4).tobytes()


def test_secure_uniforms_are_exactly_the_geometric_exponent_construction():
    """SecureGenerator builds u's bits directly; each u equals (2^52 + m) 2^-(52 + e) exactly,
    e = 1 + the leading zero bits of the word's top 12 bits, continued into fresh words while
    they are 0 (scripted here), computed independently with Python integers."""
    from fractions import Fraction

    from gpcompiler.runtime.secure import SecureGenerator
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
    # words 3, 0, 2^52 - 1, 5 (top bits 0) continue in turn: 0 then 1, 2^63, 12345, 2^64 - 1
    continuation = iter([64 + 64, 1, 51, 1])
    for word, value in zip(words, values):
        top, m = word >> 52, word & (2 ** 52 - 1)
        e = 13 - top.bit_length() if top else 12 + next(continuation)
        assert Fraction(value) == Fraction(2 ** 52 + m, 2 ** (52 + e)), word
    assert fresh == [7]
    fresh[:] = [0] * 15 + [100]      # e = 12 + 15 * 64 + 58 = 1030: u is subnormal, rounded
    deep = Scripted()._uniforms(numpy.array([5], dtype=numpy.uint64))[0]
    assert deep == float(Fraction(2 ** 52 + 5, 2 ** (52 + 1030))) and 0 < deep < 2.0 ** -1022


def _scripted_normals(radius_words, angle_words):
    """standard_normal of 2n values (one block) from the given words: (x, y) pairs."""
    from gpcompiler.runtime.secure import SecureGenerator

    class Scripted(SecureGenerator):
        def _words(self, count):
            return numpy.array(radius_words + angle_words, dtype=numpy.uint64)

    z = Scripted().standard_normal(2 * len(radius_words))
    return z[:len(radius_words)], z[len(radius_words):]


def test_secure_box_muller_pairs_match_mpmath():
    """Box-Muller's radius is sqrt(-2 ln u), u from a radius word (exact construction above);
    its angle is pi (k 2^-54 + b), k the top 54 bits of an angle word as a signed integer and
    b its lowest bit. For scripted words, both outputs equal r (cos, sin)(angle) computed by
    mpmath to 1e-15 relative to the radius (a float64 tolerance), also at the ends of the
    tangent's range (k = -2^53, 2^53 - 1) and for u near 1 and near 2^-12."""
    from fractions import Fraction

    import mpmath
    rng = numpy.random.default_rng(21)
    angle = rng.integers(0, 2 ** 64, 1500, dtype=numpy.uint64, endpoint=False).tolist()
    angle += [2 ** 63, 2 ** 63 + 1, 2 ** 63 - 1, 2 ** 63 - 2, 0, 1, 2 ** 62, 2 ** 64 - 2 ** 62,
              2 ** 64 - 1, 2 ** 64 - 1024, 1023]
    radius = rng.integers(2 ** 52, 2 ** 64, len(angle) - 4, dtype=numpy.uint64).tolist()
    radius += [2 ** 64 - 1, 2 ** 64 - 2 ** 40, 2 ** 52, 2 ** 53 - 1]
    x, y = _scripted_normals(radius, angle)
    for word, a, xi, yi in zip(radius, angle, x.tolist(), y.tolist()):
        top, m = word >> 52, word & (2 ** 52 - 1)
        u = Fraction(2 ** 52 + m, 2 ** (52 + 13 - top.bit_length()))
        r = mpmath.sqrt(-2 * mpmath.log(mpmath.mpf(u.numerator) / u.denominator))
        k = (a - 2 ** 64 if a >= 2 ** 63 else a) >> 10
        theta = mpmath.pi * (mpmath.mpf(k) / 2 ** 54 + (a & 1))
        assert abs(xi - r * mpmath.cos(theta)) <= 1e-15 * r, (word, a)
        assert abs(yi - r * mpmath.sin(theta)) <= 1e-15 * r, (word, a)


class _StuckSign:
    """Mutant entropy: the lowest bit of every word is 0 (Box-Muller's half-turn bit)."""

    def _words(self, count):
        return super()._words(count) & numpy.uint64(2 ** 64 - 2)


class _ShallowRadius:
    """Mutant entropy: no word has its top 12 bits 0, so no uniform is below 2^-12."""

    def _words(self, count):
        words = super()._words(count).copy()
        words[words < 2 ** 52] |= numpy.uint64(2 ** 52)
        return words


def _pairs(generator, blocks):
    """Box-Muller pairs (x, y) of ``blocks`` blocks of secure normals."""
    n = generator._BLOCK // 2
    z = generator.standard_normal(blocks * 2 * n).reshape(blocks, 2, n)
    return z[:, 0].ravel(), z[:, 1].ravel()


def _pair_tests(generator):
    """p-values: the angle of (x, y) uniform, r^2 ~ Exp(mean 2) (KS), the joint law of 8
    angle sectors x 4 radius quartiles (chi-square, each cell 1/32 exactly), and
    r^2 > 2k ln 2 (u < 2^-k) with probability 2^-k for k = 10..16 (binomial: the tail)."""
    x, y = _pairs(generator, 16)
    angle, squared = numpy.arctan2(y, x), x * x + y * y
    p = [stats.kstest(angle, "uniform", args=(-math.pi, 2 * math.pi)).pvalue,
         stats.kstest(squared, "expon", args=(0, 2)).pvalue]
    sector = numpy.minimum(((angle + math.pi) / (2 * math.pi) * 8).astype(int), 7)
    quartile = numpy.searchsorted(2 * numpy.log([4 / 3, 2, 4]), squared)
    p.append(stats.chisquare(numpy.bincount(4 * sector + quartile, minlength=32)).pvalue)
    for k in range(10, 17):
        exceed = int(numpy.sum(squared > 2 * k * math.log(2)))
        p.append(stats.binomtest(exceed, squared.size, 2.0 ** -k).pvalue)
    return p


def test_secure_box_muller_pairs_have_a_uniform_angle_and_exponential_radius():
    """Exact distribution tests of the pairs, at one in a million each; the same tests reject
    mutant entropy that fixes the half-turn bit or never reaches below 2^-12 (they have
    power against a biased angle and a truncated radius)."""
    from gpcompiler.runtime.secure import SecureGenerator
    assert min(_pair_tests(SecureGenerator())) > ALPHA / 10
    for mutant in (_StuckSign, _ShallowRadius):
        assert min(_pair_tests(type("Mutant", (mutant, SecureGenerator), {})())) < ALPHA
